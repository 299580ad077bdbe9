import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { PeriodicJob, PeriodicJobs } from '../../observability/periodic-jobs.js';
import { DataSource } from 'typeorm';
import { makeIdentity } from '../../common/auth/identity.js';
import { Clock } from '../../common/clock.js';
import { COMPUTE_DRIVER, type ComputeDriver } from '../../compute/compute-driver.js';
import { CONFIG } from '../../config/config.module.js';
import type { Config } from '../../config/config.js';
import { sql } from '../../database/sql.js';
import { hostJoin, hostNamed } from '../../pools/hosts.repository.js';
import {
  dropParam,
  leaseJoin,
  lockActive,
  reservationsAs,
  stampParam,
} from '../../model/lease-tables.js';
import { withTransaction } from '../../database/transaction.js';
import { LeaseRemover } from '../lease-remover.js';

/** A claim made through the API whose server Nova does not show yet may be booting. */
const BOOT_GRACE = '10 minutes';
/**
 * In a reservation's params: when its server was seen SHELVED_OFFLOADED, or gone (deleted
 * by its owner: nothing to shelve; its lease's start says so), internal.
 */
const SEEN = 'shelved_seen_at';

/**
 * Keeps instance reservations in line with the compute service: a server booted with a
 * lease for later is shelved until its start (promptly: a short tick of its own), and the claims show the servers that
 * really hold the slots (Placement's allocations), not only those claimed through
 * Climate's API.
 */
@Injectable()
export class InstanceUpkeep implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('virtual:instance');
  private readonly job: PeriodicJob;
  private shelving: Promise<void> = Promise.resolve();
  private busy = false;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(COMPUTE_DRIVER) private readonly driver: ComputeDriver,
    private readonly leases: LeaseRemover,
    private readonly clock: Clock,
    jobs: PeriodicJobs,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.job = jobs.define({
      name: 'shelve',
      everyMs: config.shelvePollMs,
      run: () => this.shelveNew(),
    });
  }

  onApplicationBootstrap(): void {
    if (this.config.plugins.includes('virtual:instance')) this.job.start();
  }

  /** Bounded wait for a pass in hand; what it did not finish, the next manager redoes. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.job.stop();
    await Promise.race([this.shelving, new Promise((r) => setTimeout(r, 10_000).unref())]);
  }

  async run(): Promise<void> {
    await this.shelveUntilStart(true);
    await this.recordHolders();
  }

  /**
   * The short tick (SHELVE_POLL_MS): only servers not yet seen shelved, so Nova is asked
   * about each waiting server until it is SHELVED_OFFLOADED, and then no more. A pass
   * still running is not doubled. `serverId`: that server only (Nova said it is ACTIVE).
   */
  async shelveNew(serverId: string | null = null): Promise<void> {
    if (this.busy || this.stopped || !this.config.plugins.includes('virtual:instance')) return;
    // Called on a timer and on notifications: a failure (the database away) waits for
    // the next call, logged, never an unhandled rejection.
    await this.shelveUntilStart(false, serverId).catch((error: unknown) => {
      this.logger.warn({ msg: 'shelve pass failed; retried at the next tick', error });
    });
  }

  /** One pass at a time: the short tick and the periodic upkeep never shelve together. */
  private shelveUntilStart(all: boolean, serverId: string | null = null): Promise<void> {
    const pass = this.shelving.then(async () => {
      this.busy = true;
      try {
        await this.shelvePass(all, serverId);
      } finally {
        this.busy = false;
      }
    });
    this.shelving = pass.catch(() => undefined);
    return pass;
  }

  /**
   * Servers reserved for a lease that has not started: shelved and offloaded. One that
   * Nova put in ERROR before its lease was due (a boot that found no host, or failed on
   * its host) will never start: its lease is deleted, so it holds no slot. `all` checks
   * those already seen shelved too (one unshelved by hand is shelved again).
   */
  private async shelvePass(all: boolean, serverId: string | null): Promise<void> {
    const { rows } = await sql<{
      id: string;
      server_id: string;
      lease_id: string;
      project_id: string;
      due: boolean;
      seen: boolean;
    }>(
      this.dataSource.manager,
      `SELECT r.id, r.params ->> 'server_id' AS server_id, l.id AS lease_id, l.project_id,
              l.start_at <= $1 AS due, r.params ? '${SEEN}' AS seen
         FROM ${reservationsAs('r')} ${leaseJoin('l', 'r')}
        WHERE r.resource_type = 'virtual:instance' AND r.status = 'pending'
          AND l.status = 'PENDING' AND r.params ->> 'server_id' IS NOT NULL
          AND ($2 OR NOT r.params ? '${SEEN}')
          AND ($3::text IS NULL OR r.params ->> 'server_id' = $3)`,
      [this.clock.now(), all, serverId],
    );
    for (const row of rows) {
      const { server_id: id, lease_id: leaseId, project_id: project, due } = row;
      try {
        let server = await this.driver.getServer(id);
        let seen = row.seen;
        const settled = (s: typeof server) => s === null || s.status === 'SHELVED_OFFLOADED';
        if (seen && !settled(server)) {
          await this.mark(row.id, false);
          seen = false;
        }
        if (server?.status === 'ACTIVE' || server?.status === 'SHELVED') {
          await this.driver.shelveServer(id);
          // Done only once Nova shows it offloaded: a shelve still under way is asked
          // about again at the next tick.
          server = await this.driver.getServer(id);
        }
        if (settled(server) && !seen) await this.mark(row.id, true);
        // A due lease's start is retrying its unshelve: that start decides.
        if (server?.status === 'ERROR' && !due) {
          await this.leases.delete(makeIdentity('climate', project, ['admin']), leaseId);
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

  /** Records (or forgets) that the reservation's server was seen SHELVED_OFFLOADED. */
  private async mark(reservationId: string, seen: boolean): Promise<void> {
    const em = this.dataSource.manager;
    if (seen) await stampParam(em, reservationId, SEEN);
    else await dropParam(em, reservationId, SEEN);
  }

  private async recordHolders(): Promise<void> {
    const { rows } = await sql<{ id: string; hosts: string[] }>(
      this.dataSource.manager,
      `SELECT r.id, array_agg(h.hypervisor_hostname) AS hosts
         FROM ${reservationsAs('r')} JOIN instance_allocations a ON a.reservation_id = r.id
         ${hostJoin('h', 'a.host_id')}
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
      if (!(await lockActive(tx, reservationId))) return;
      await sql(
        tx,
        `INSERT INTO claims (id, reservation_id, server_id, host_id, created_at)
         SELECT uuid7(), $1, u.server_id, h.id, now()
           FROM unnest($2::text[], $3::text[]) u(server_id, host)
           ${hostNamed('h', 'u.host')}
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
