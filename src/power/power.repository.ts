import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { sql } from '../database/sql.js';
import { HOST_USAGE } from '../pools/host-usage.js';
import { hostsAs } from '../pools/hosts.repository.js';
import { poolMembershipJoin } from '../pools/pools.repository-power.js';
import type { Interval, PowerState } from './power-plan.js';

/** A host with its power record and whether the power plan may switch it off. */
export interface HostPower {
  hostId: number;
  name: string;
  state: PowerState;
  deadline: Date | null;
  changedAt: Date;
  alwaysOn: boolean;
  /** Servers were found on it when the plan last looked: kept on. */
  holdsServers: boolean;
  /**
   * Reservable and in the freepool. A host in a reservation's pool (prepared, running,
   * or ended but not yet handed back) is kept on; so is one shared or recycled.
   */
  managed: boolean;
  /** It has a power record (a host registered since the plan last ran has none yet). */
  recorded: boolean;
}

interface HostPowerRow {
  host_id: number;
  name: string;
  state: PowerState;
  deadline: Date | null;
  changed_at: Date;
  always_on: boolean;
  holds_servers: boolean;
  managed: boolean;
  recorded: boolean;
}

/** `LEFT JOIN host_power <hp> ON <hp>.host_id = <hostId>`: a host's power record, if any. */
export function hostPowerJoin(hp: string, hostId: string): string {
  return `LEFT JOIN host_power ${hp} ON ${hp}.host_id = ${hostId}`;
}

/** SQL: the power record `hp` (joined by hostPowerJoin) is on; a host without one is. */
export function isOnSql(hp: string): string {
  return `coalesce(${hp}.state, 'on') = 'on'`;
}

/** SQL: servers were found on host `hostId` (SQL) when the plan last looked. */
export function holdsServersSql(hostId: string): string {
  return `EXISTS (SELECT 1 FROM host_power hp WHERE hp.host_id = ${hostId} AND hp.holds_servers)`;
}

/** `power_log <l>`: the table, for a statement that reads the states hosts entered. */
export function powerLogAs(l: string): string {
  return `power_log ${l}`;
}

/** pg_advisory_xact_lock key of the power decisions (any constant no other lock uses). */
const POWER_LOCK = 7_310_043;

/**
 * The power plan's record: `host_power` (state, deadline, claim, always-on mark) and
 * `power_log` (every state a host entered, when). Transitions are claimed by
 * compare-and-set on the state and the claim, so two managers never act on one host.
 */
@Injectable()
export class PowerRepository {
  /** Every host (or those of `ids`) with its power record (on, for one just registered), by id. */
  async hosts(em: EntityManager, ids: number[] | null = null): Promise<HostPower[]> {
    const { rows } = await sql<HostPowerRow>(
      em,
      `SELECT h.id AS host_id, h.hypervisor_hostname AS name, coalesce(hp.state, 'on') AS state,
              hp.deadline, coalesce(hp.changed_at, h.created_at) AS changed_at,
              coalesce(hp.always_on, false) AS always_on,
              coalesce(hp.holds_servers, false) AS holds_servers,
              coalesce(h.reservable AND ah.kind = 'freepool', false) AS managed,
              hp.host_id IS NOT NULL AS recorded
         FROM ${hostsAs('h')} ${hostPowerJoin('hp', 'h.id')}
         ${poolMembershipJoin('ah', 'h')}
        ${ids === null ? '' : 'WHERE h.id = ANY($1::int[])'}
        ORDER BY h.id`,
      ids === null ? [] : [ids],
    );
    return rows.map((r) => ({
      hostId: r.host_id,
      name: r.name,
      state: r.state,
      deadline: r.deadline,
      changedAt: r.changed_at,
      alwaysOn: r.always_on,
      holdsServers: r.holds_servers,
      managed: r.managed,
      recorded: r.recorded,
    }));
  }

  /**
   * What the backlog holds on each host (or those of `ids`) over [from, until):
   * allocations and slots. With `ids`, read host by host on the allocation indexes.
   */
  async usage(
    em: EntityManager,
    from: Date,
    until: Date,
    ids: number[] | null = null,
  ): Promise<Map<number, Interval[]>> {
    const { rows } = await sql<{ host_id: number; s: Date; e: Date }>(
      em,
      `SELECT a.host_id, lower(a.during) AS s, upper(a.during) AS e FROM ${HOST_USAGE} a
        WHERE a.during && tstzrange($1, $2, '[)')
          ${ids === null ? '' : 'AND a.host_id = ANY($3::int[])'}`,
      ids === null ? [from, until] : [from, until, ids],
    );
    const usage = new Map<number, Interval[]>();
    for (const r of rows) {
      const list = usage.get(r.host_id) ?? [];
      list.push({ start: r.s.getTime(), end: r.e.getTime() });
      usage.set(r.host_id, list);
    }
    return usage;
  }

  /**
   * Takes the decision lock of this transaction, or false when another manager is
   * deciding now (it then decides for everyone; this one skips the round).
   */
  async tryDecisionLock(tx: EntityManager): Promise<boolean> {
    const { rows } = await sql<{ locked: boolean }>(
      tx,
      `SELECT pg_try_advisory_xact_lock(${POWER_LOCK}) AS locked`,
    );
    return rows[0].locked;
  }

  /** Transitions begun (booting, stopping) since `since`, by any manager. */
  async begunSince(em: EntityManager, since: Date): Promise<number> {
    const { rows } = await sql<{ n: number }>(
      em,
      `SELECT count(*)::int AS n FROM power_log WHERE at > $1 AND state IN ('booting', 'stopping')`,
      [since],
    );
    return rows[0].n;
  }

  /**
   * Begins a transition on the hosts still in state `from` and not claimed by another
   * manager: the transitional state, its deadline, and this manager's claim. Returns the
   * hosts it began.
   */
  async begin(
    tx: EntityManager,
    ids: number[],
    from: PowerState,
    to: 'booting' | 'stopping',
    now: Date,
    deadline: Date,
    claim: { owner: string; until: Date },
  ): Promise<number[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<{ host_id: number }>(
      tx,
      `UPDATE host_power SET state = $3, deadline = $5, changed_at = $4,
              claimed_by = $6, claim_expires_at = $7
        WHERE host_id = ANY($1::int[]) AND state = $2
          AND (claimed_by IS NULL OR claim_expires_at < $4)
        RETURNING host_id`,
      [ids, from, to, now, deadline, claim.owner, claim.until],
    );
    const begun = rows.map((r) => r.host_id);
    await this.log(tx, begun, to, now);
    return begun;
  }

  /** Ends a transition this manager holds: the host is `to` now. False if it lost it. */
  async settle(
    tx: EntityManager,
    hostId: number,
    from: 'booting' | 'stopping',
    to: 'on' | 'off',
    now: Date,
    owner: string,
  ): Promise<boolean> {
    const { affected } = await sql(
      tx,
      `UPDATE host_power SET state = $3, deadline = NULL, changed_at = $4,
              claimed_by = NULL, claim_expires_at = NULL
        WHERE host_id = $1 AND state = $2 AND claimed_by = $5`,
      [hostId, from, to, now, owner],
    );
    if (affected !== 1) return false;
    await this.log(tx, [hostId], to, now);
    return true;
  }

  /** Lets go of this manager's claims (the transitions stay for the next run). */
  async release(em: EntityManager, ids: number[], owner: string): Promise<void> {
    if (ids.length === 0) return;
    await sql(
      em,
      `UPDATE host_power SET claimed_by = NULL, claim_expires_at = NULL
        WHERE host_id = ANY($1::int[]) AND claimed_by = $2`,
      [ids, owner],
    );
  }

  /**
   * Claims transitions nobody holds (or whose holder died: its claim expired), to see
   * them through: up to `limit`, skipping rows another manager is claiming right now.
   */
  async claimUnsettled(
    em: EntityManager,
    now: Date,
    claim: { owner: string; until: Date },
    limit: number,
  ): Promise<{ hostId: number; name: string; state: 'booting' | 'stopping' }[]> {
    const { rows } = await sql<{ host_id: number; name: string; state: 'booting' | 'stopping' }>(
      em,
      `UPDATE host_power hp SET claimed_by = $2, claim_expires_at = $3
         FROM ${hostsAs('h')}
        WHERE h.id = hp.host_id AND hp.host_id IN (
                SELECT host_id FROM host_power
                 WHERE state IN ('booting', 'stopping')
                   AND (claimed_by IS NULL OR claim_expires_at < $1)
                 ORDER BY deadline LIMIT $4 FOR UPDATE SKIP LOCKED)
        RETURNING hp.host_id, h.hypervisor_hostname AS name, hp.state`,
      [now, claim.owner, claim.until, limit],
    );
    return rows.map((r) => ({ hostId: r.host_id, name: r.name, state: r.state }));
  }

  async setAlwaysOn(
    em: EntityManager,
    hostId: number,
    alwaysOn: boolean,
    now: Date,
  ): Promise<void> {
    await sql(
      em,
      `INSERT INTO host_power (host_id, changed_at, always_on) VALUES ($1, $2, $3)
       ON CONFLICT (host_id) DO UPDATE SET always_on = $3`,
      [hostId, now, alwaysOn],
    );
  }

  /**
   * Gives the hosts of `ids` their power record (on) from `now`; a host with one keeps
   * it. The records mark their hosts for the plan's next refresh too.
   */
  async ensureRows(tx: EntityManager, ids: number[], now: Date): Promise<void> {
    if (ids.length === 0) return;
    await sql(
      tx,
      `INSERT INTO host_power (host_id, changed_at)
       SELECT h.id, $2::timestamptz FROM ${hostsAs('h')} WHERE h.id = ANY($1::int[])
       ON CONFLICT (host_id) DO NOTHING`,
      [ids, now],
    );
  }

  /** Records whether servers were found on these hosts. */
  async setHoldsServers(em: EntityManager, ids: number[], holds: boolean): Promise<void> {
    if (ids.length === 0) return;
    await sql(
      em,
      `UPDATE host_power SET holds_servers = $2
        WHERE host_id = ANY($1::int[]) AND holds_servers <> $2`,
      [ids, holds],
    );
  }

  /** Forgets log entries before `before`, keeping each host's last one (its state then). */
  async prune(em: EntityManager, before: Date): Promise<void> {
    await sql(
      em,
      `DELETE FROM power_log l WHERE l.at < $1 AND EXISTS (
         SELECT 1 FROM power_log n WHERE n.host_id = l.host_id AND n.at < $1
            AND (n.at, n.id) > (l.at, l.id))`,
      [before],
    );
  }

  private async log(em: EntityManager, ids: number[], state: PowerState, at: Date): Promise<void> {
    if (ids.length === 0) return;
    await sql(
      em,
      `INSERT INTO power_log (host_id, state, at) SELECT h, $2, $3 FROM unnest($1::int[]) h`,
      [ids, state, at],
    );
  }
}
