/*
 * Part of lease-tables.ts (the SQL of leases and reservations): what the provisioning
 * lead time (power/provisioning.ts) asks of them.
 */

/**
 * SQL: a pending reservation whose id (as text) is `id` and whose lease starts by `by`
 * (SQL timestamptz).
 */
export function pendingBySql(id: string, by: string): string {
  return `EXISTS (SELECT 1 FROM reservations r JOIN leases l ON l.id = r.lease_id
                     WHERE r.id::text = ${id} AND r.status = 'pending'
                       AND l.start_at <= ${by})`;
}

/**
 * SQL: (id, project_id, start_at, extra) of the host reservations of pending leases that
 * start after `after` and by `by` (SQL timestamptz), `extra` their extra projects.
 */
export function hostReservationsStartingSql(after: string, by: string): string {
  return `SELECT r.id, l.project_id, l.start_at, coalesce(r.params -> 'extra_projects', '[]') AS extra
           FROM reservations r JOIN leases l ON l.id = r.lease_id
          WHERE r.resource_type = 'physical:host' AND r.status = 'pending' AND l.status = 'PENDING'
            AND l.start_at > ${after} AND l.start_at <= ${by}`;
}
