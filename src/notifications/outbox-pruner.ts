import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { deleteOlder } from './notification-outbox.js';
import { runsManager } from '../config/roles.js';
import { PeriodicJob, PeriodicJobs } from '../observability/periodic-jobs.js';

const HOUR = 3600_000;
/** Rows deleted per statement, so a long-grown outbox goes without one huge transaction. */
const BATCH = 10_000;

/**
 * Every replica writes the outbox (NotificationOutbox); the managers with NOTIFY_URL or
 * WEBHOOK_URLS send and delete it. A manager with neither cannot send, and a fleet with no
 * sink at all would keep every row for ever: such a manager deletes, once an hour, the rows
 * older than NOTIFY_RETENTION_HOURS, long enough for a manager that has a sink to outlast
 * an outage of its broker or receiver. A manager with a sink keeps rows until they are sent.
 */
@Injectable()
export class OutboxPruner implements OnApplicationBootstrap {
  private readonly logger = new Logger('notifications');
  private readonly job: PeriodicJob;

  constructor(
    private readonly dataSource: DataSource,
    private readonly clock: Clock,
    jobs: PeriodicJobs,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.job = jobs.define({
      name: 'outbox-prune',
      everyMs: HOUR,
      runAtStart: true,
      run: () => this.prune(),
    });
  }

  /** True where this replica would prune: a manager with no way to send. */
  get prunes(): boolean {
    const { notify, webhooks } = this.config;
    return runsManager(this.config) && notify.url === null && webhooks.urls.length === 0;
  }

  onApplicationBootstrap(): void {
    if (this.prunes) this.job.start();
  }

  /** Deletes the rows past the retention; how many (tests call it). */
  prune(): Promise<number> {
    return this.deleteOld();
  }

  private async deleteOld(): Promise<number> {
    const before = new Date(this.clock.now().getTime() - this.config.notify.retentionHours * HOUR);
    let total = 0;
    for (;;) {
      const n = await deleteOlder(this.dataSource.manager, before, BATCH);
      total += n;
      if (n < BATCH) break;
    }
    if (total > 0) {
      this.logger.log({
        msg: 'old notifications deleted: no NOTIFY_URL or WEBHOOK_URLS on this manager',
        deleted: total,
        older_than_hours: this.config.notify.retentionHours,
      });
    }
    return total;
  }
}
