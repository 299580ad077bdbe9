import type { EntityManager } from 'typeorm';
import { sql } from '../../database/sql.js';
import { instancePoolSql, membershipJoin } from '../../pools/pools.repository.js';
import { hostJoin, namesOrEveryHost } from '../../pools/hosts.repository.js';
import { leaseJoin, reservationsAs } from '../../model/lease-tables.js';
import type { FilterAnswer, SchedulingRequest } from '../scheduling.js';

/**
 * What virtual:instance says in the scheduler filter: a server that holds a reservation
 * of its own whose lease has started (a boot that starts now, an unshelve at the start)
 * goes to its slot's host and nowhere else; a server with an instance reservation's
 * flavor goes only to that reservation's hosts, and only for its project (Blazar leaves
 * this to Nova's aggregate filters).
 */
export async function scheduleSlots(
  em: EntityManager,
  request: SchedulingRequest,
  now: Date,
): Promise<FilterAnswer | null> {
  if (request.instanceUuid !== null) {
    const own = await ownSlotHosts(em, request.instanceUuid, now);
    if (own.length > 0) {
      const asked = request.names ?? own;
      return {
        hosts: asked.filter((h) => own.includes(h)),
        rejected: Object.fromEntries(
          asked.filter((h) => !own.includes(h)).map((h) => [h, 'not the host of its slot']),
        ),
      };
    }
  }
  const reservationId = request.flavorExtraSpecs['aggregate_instance_extra_specs:reservation'];
  if (typeof reservationId !== 'string') return null;
  return reservationHosts(em, request.names, request.projectId, reservationId);
}

async function ownSlotHosts(em: EntityManager, serverId: string, now: Date): Promise<string[]> {
  const { rows } = await sql<{ name: string }>(
    em,
    `SELECT h.hypervisor_hostname AS name
       FROM ${reservationsAs('r')} ${leaseJoin('l', 'r')}
       JOIN instance_allocations a ON a.reservation_id = r.id ${hostJoin('h', 'a.host_id')}
      WHERE r.params ->> 'server_id' = $1 AND r.status IN ('pending', 'active')
        AND l.start_at <= $2`,
    [serverId, now],
  );
  return rows.map((r) => r.name);
}

async function reservationHosts(
  em: EntityManager,
  names: string[] | null,
  project: string,
  reservationId: string,
): Promise<FilterAnswer> {
  const { rows } = await sql<{ name: string; member: boolean; allowed: boolean }>(
    em,
    `WITH asked AS (
       ${namesOrEveryHost('$1')}),
     pool AS (${instancePoolSql('$2')})
     SELECT s.name,
            EXISTS (SELECT 1 FROM pool p ${membershipJoin('ah', 'p')}
                      ${hostJoin('h', 'ah.host_id')} WHERE h.hypervisor_hostname = s.name) AS member,
            coalesce((SELECT metadata ->> 'blazar:owner' = $3
                             OR $3 = ANY(string_to_array(metadata ->> 'filter_tenant_id', ','))
                        FROM pool), false) AS allowed
       FROM asked s ORDER BY s.i`,
    [names, reservationId, project],
  );
  const hosts: string[] = [];
  const rejected: Record<string, string> = {};
  for (const row of rows) {
    if (!row.member) rejected[row.name] = `host is not in instance reservation ${reservationId}`;
    else if (!row.allowed)
      rejected[row.name] = `reservation ${reservationId} belongs to another project`;
    else hosts.push(row.name);
  }
  return { hosts, rejected };
}
