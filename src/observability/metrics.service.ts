import { Inject, Injectable, Logger } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { LEASE_STATUSES } from '../model/lease-status.js';
import { errorMessage, SingleFlight, within } from './bounded.js';
import { compactGaugeCounts, readGaugeCounts } from './gauge-counts.js';
import { Metrics } from './metrics.js';

/** The pools a host sits in (one at a time); `none` for a host in no pool. */
const POOLS = ['freepool', 'shared', 'recycle', 'reservation', 'none'];

/** What pg's Pool exposes; the embedded adapter's pool may lack it. */
interface PoolStats {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  options?: { max?: number };
}

function isPoolStats(value: unknown): value is PoolStats {
  const pool = value as Partial<PoolStats> | null;
  return (
    typeof pool?.totalCount === 'number' &&
    typeof pool.idleCount === 'number' &&
    typeof pool.waitingCount === 'number'
  );
}

/** One scrape of /metrics: the counters kept in memory plus gauges read now. */
@Injectable()
export class MetricsService {
  private readonly logger = new Logger('metrics');
  private readonly reads = new SingleFlight<void>();
  /** Whether the last scrape skipped the database gauges: logged on change, not each time. */
  private skipping = false;

  constructor(
    private readonly metrics: Metrics,
    private readonly dataSource: DataSource,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  get contentType(): string {
    return this.metrics.registry.contentType;
  }

  /**
   * The exposition text. The database gauges are read from small count tables, bounded
   * by DATABASE_CONNECT_TIMEOUT_MS; when that fails they are left out of this scrape (and
   * counted), so a database outage never hangs the scrape.
   */
  async scrape(): Promise<string> {
    this.readPool();
    let fromDatabase = '';
    try {
      await within(
        this.reads.run(() => this.readDatabase()),
        this.config.databaseConnectTimeoutMs,
        'metrics from the database',
      );
      fromDatabase = await this.metrics.databaseRegistry.metrics();
      if (this.skipping) this.logger.log({ msg: 'database gauges are back in the metrics' });
      this.skipping = false;
    } catch (error) {
      this.metrics.collectErrors.inc();
      if (!this.skipping) {
        this.logger.warn({ msg: 'database gauges skipped', reason: errorMessage(error) });
      }
      this.skipping = true;
    }
    return (await this.metrics.registry.metrics()) + fromDatabase;
  }

  private readPool(): void {
    const pool = (this.dataSource.driver as { master?: unknown }).master;
    if (!isPoolStats(pool)) return;
    this.metrics.dbPool.set({ state: 'total' }, pool.totalCount);
    this.metrics.dbPool.set({ state: 'idle' }, pool.idleCount);
    if (typeof pool.options?.max === 'number')
      this.metrics.dbPool.set({ state: 'max' }, pool.options.max);
    this.metrics.dbPoolWaiting.set(pool.waitingCount);
  }

  private async readDatabase(): Promise<void> {
    // From the count tables, never a scan of hosts or leases: see GaugeCounts.
    await compactGaugeCounts(this.dataSource.manager);
    const counts = await readGaugeCounts(this.dataSource.manager);
    const hosts = counts.poolHosts;
    const leases = new Map<string, { n: number; degraded: number }>();
    for (const row of counts.leases) {
      const entry = leases.get(row.status) ?? { n: 0, degraded: 0 };
      entry.n += row.n;
      if (row.degraded) entry.degraded += row.n;
      leases.set(row.status, entry);
    }

    const { poolHosts, leases: byStatus, degradedLeases } = this.metrics;
    // Zeros first, so that an emptied pool or status reads 0 rather than vanishing.
    for (const pool of POOLS)
      for (const reservable of ['true', 'false']) poolHosts.set({ pool, reservable }, 0);
    for (const row of hosts)
      poolHosts.set({ pool: row.pool, reservable: String(row.reservable) }, row.n);
    for (const status of LEASE_STATUSES) byStatus.set({ status }, 0);
    for (const [status, row] of leases) byStatus.set({ status }, row.n);
    degradedLeases.set([...leases.values()].reduce((sum, row) => sum + row.degraded, 0));
    // The outbox itself, not a publisher's memory: true on every replica, whatever the broker.
    const outbox = await this.dataSource.query<{ n: number }[]>(
      `SELECT count(*)::int AS n FROM notification_outbox WHERE NOT published`,
    );
    this.metrics.notificationBacklog.set(outbox[0]?.n ?? 0);
  }
}
