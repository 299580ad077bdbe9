import { createHash } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { Conflict, InvalidInput } from '../common/errors.js';
import type { JsonObject } from '../common/json.js';
import type { SqlParams } from '../database/sql.js';
import type { LeaseResponse } from './dto/lease.response.js';
import { IdempotencyKey } from '../model/idempotency-key.entity.js';

/** How long a key is remembered. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;

export function requestHash(body: unknown): string {
  return createHash('sha256').update(stableJson(body)).digest('hex');
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function checkKey(key: string): void {
  if (key.length === 0 || key.length > 255) {
    throw new InvalidInput('Idempotency-Key must be 1 to 255 characters');
  }
}

/**
 * SQL (a CTE body, values bound with `p`) that claims (project, key) inside the create
 * transaction: returns a row when this request is the first (or the key had expired). A
 * concurrent request with the same key waits on the row until the first commits, and
 * returns none; `replayOf` then reads the first one's response.
 */
export function claimKeySql(
  p: SqlParams,
  projectId: string,
  key: string,
  hash: string,
  now: Date,
): string {
  const expired = new Date(now.getTime() - IDEMPOTENCY_TTL_MS);
  return `INSERT INTO idempotency_keys (project_id, key, request_hash, response, created_at)
     VALUES (${p.bind(projectId)}, ${p.bind(key)}, ${p.bind(hash)}, '{}', ${p.bind(now)}::timestamptz)
     ON CONFLICT (project_id, key) DO UPDATE
       SET request_hash = EXCLUDED.request_hash, response = EXCLUDED.response,
           created_at = EXCLUDED.created_at
     WHERE idempotency_keys.created_at < ${p.bind(expired)}::timestamptz
     RETURNING 1`;
}

/** The response stored under a key this request could not claim; 409 for another body. */
export async function replayOf(
  tx: EntityManager,
  projectId: string,
  key: string,
  hash: string,
): Promise<LeaseResponse> {
  const existing = await tx.findOneOrFail(IdempotencyKey, { where: { projectId, key } });
  if (existing.requestHash !== hash) {
    throw new Conflict(
      'Idempotency-Key was already used with a different request body',
      'IdempotencyKeyReused',
    );
  }
  return existing.response as LeaseResponse;
}

/**
 * The stored response of an earlier request with this key, looked up before the request
 * is validated: a replay answers what the original answered even once its start date
 * has passed. Null when there is none yet (or it expired); 409 for another body.
 */
export async function storedReplay(
  em: EntityManager,
  projectId: string,
  key: string,
  hash: string,
  now: Date,
): Promise<LeaseResponse | null> {
  const existing = await em.findOne(IdempotencyKey, { where: { projectId, key } });
  if (existing === null || existing.createdAt.getTime() < now.getTime() - IDEMPOTENCY_TTL_MS) {
    return null;
  }
  if (existing.requestHash !== hash) {
    throw new Conflict(
      'Idempotency-Key was already used with a different request body',
      'IdempotencyKeyReused',
    );
  }
  // An empty response: the first request is still running; it decides in claimKey.
  return Object.keys(existing.response).length === 0 ? null : (existing.response as LeaseResponse);
}

export async function storeResponse(
  tx: EntityManager,
  projectId: string,
  key: string,
  response: JsonObject,
): Promise<void> {
  await tx.update(IdempotencyKey, { projectId, key }, { response });
}

/** As `storeResponse`, a CTE body for the create's statement, written if `go`. */
export function storeResponseSql(
  p: SqlParams,
  projectId: string,
  key: string,
  response: object,
  go: string,
): string {
  return `UPDATE idempotency_keys SET response = ${p.bind(JSON.stringify(response))}::jsonb
     WHERE project_id = ${p.bind(projectId)} AND key = ${p.bind(key)} AND ${go}`;
}
