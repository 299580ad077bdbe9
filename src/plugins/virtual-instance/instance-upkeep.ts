import { Inject, Injectable, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { DataSource } from 'typeorm';
import { makeIdentity } from '../../common/auth/identity.js';
import { Clock } from '../../common/clock.js';
import { COMPUTE_DRIVER, type ComputeDriver } from '../../compute/compute-driver.js';
import { sql } from '../../database/sql.js';
import { withTransaction } from '../../database/transaction.js';
import { LeaseRemover } from '../lease-remover.js';

/** A claim made through the API whose server Nova does not show yet may be booting. */
const BOOT_GRACE = '10 minutes';

/**
 * Keeps instance reservations in line with the compute service: a server booted with a
 * lease for later is shelved until its start, and the claims show the servers that
 * really hold the slots (Placement's allocations), not only those claimed through
 * Climate's API.
 */
@Injectable()
export class InstanceUpkeep {
  private readonly logger = new Logger('virtual:instance');

  constructor(
    private readonly dataSource: DataSource,
    @Inject(COMPUTE_DRIVER) private readonly driver: ComputeDriver,
    // LeaseRemover is looked up when used: it depends on the plugins, which depend on this.
    private readonly modules: ModuleRef,
    private readonly clock: Clock,
  ) {}

  async run(): Promise<void> {
    await this.shelveUntilStart();
    await this.recordHolders();
  }

  /**
   * Servers reserved for a lease that has not started: shelved and offloaded. One that
   * Nova put in ERROR before its lease was due (a boot that found no host, or failed on
   * its host) will never start: its lease is deleted, so it holds no slot.
   */
  private async shelveUntilStart(): Promise<void> {
    const { rows } = await sql<{
      server_id: string;
      lease_id: string;
      project_id: string;
      due: boolean;
    }>(
      this.dataSource.manager,
      `SELECT r.params ->> 'server_id' AS server_id, l.id AS lease_id, l.project_id,
              l.start_at <= $1 AS due
         FROM reservations r JOIN leases l ON l.id = r.lease_id
        WHERE r.resource_type = 'virtual:instance' AND r.status = 'pending'
          AND l.status = 'PENDING' AND r.params ->> 'server_id' IS NOT NULL`,
      [this.clock.now()],
    );
    for (const { server_id: id, lease_id: leaseId, project_id: project, due } of rows) {
      try {
        const server = await this.driver.getServer(id);
        if (server?.status === 'ACTIVE') await this.driver.shelveServer(id);
        // A due lease's start is retrying its unshelve: that start decides.
        if (server?.status === 'ERROR' && !due) {
          await this.modules
            .get(LeaseRemover, { strict: false })
            .delete(makeIdentity('climate', project, ['admin']), leaseId);
          this.logger.warn({
            msg: 'reserved server in ERROR; its lease is deleted',
            server_id: id,
            lease_id: leaseId,
          });
        }
      } catch (error) {
        this.logger.warn({ msg: 'could not shelve a reserved server', server_id: id, error });
      }
    }
  }

  private async recordHolders(): Promise<void> {
    const { rows } = await sql<{ id: string; hosts: string[] }>(
      this.dataSource.manager,
      `SELECT r.id, array_agg(h.hypervisor_hostname) AS hosts
         FROM reservations r JOIN instance_allocations a ON a.reservation_id = r.id
         JOIN hosts h ON h.id = a.host_id
        WHERE r.resource_type = 'virtual:instance' AND r.status = 'active'
        GROUP BY r.id`,
    );
    for (const r of rows) {
      try {
        const holders = await this.driver.slotHolders(r.id, r.hosts);
        if (holders !== null) await this.record(r.id, holders);
      } catch (error) {
        this.logger.warn({ msg: 'could not read slot holders', reservation_id: r.id, error });
      }
    }
  }

  /** Under the reservation's lock, as claims are made: Nova's holders, on their hosts. */
  private async record(
    reservationId: string,
    holders: { serverId: string; host: string }[],
  ): Promise<void> {
    await withTransaction(this.dataSource, async (tx) => {
      const locked = await sql(
        tx,
        `SELECT 1 FROM reservations WHERE id = $1 AND status = 'active' FOR UPDATE`,
        [reservationId],
      );
      if (locked.rows.length === 0) return;
      await sql(
        tx,
        `INSERT INTO claims (id, reservation_id, server_id, host_id, created_at)
         SELECT uuid7(), $1, u.server_id, h.id, now()
           FROM unnest($2::text[], $3::text[]) u(server_id, host)
           JOIN hosts h ON h.hypervisor_hostname = u.host
         ON CONFLICT (reservation_id, server_id) DO UPDATE SET host_id = EXCLUDED.host_id`,
        [reservationId, holders.map((h) => h.serverId), holders.map((h) => h.host)],
      );
      await sql(
        tx,
        `DELETE FROM claims WHERE reservation_id = $1 AND NOT (server_id = ANY($2::text[]))
            AND created_at < now() - interval '${BOOT_GRACE}'`,
        [reservationId, holders.map((h) => h.serverId)],
      );
    });
  }
}
