import {
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  OnApplicationShutdown,
} from '@nestjs/common';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { HealingService } from './healing.service.js';
import { PoolSync } from './pool-sync.js';

/**
 * Periodic pool work where the manager runs: heal reservations whose hosts failed
 * (retrying what could not be moved before) and release recycled hosts.
 */
@Injectable()
export class PoolsMaintenance implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('pools');
  private timer: NodeJS.Timeout | null = null;
  private running = false;

  constructor(
    private readonly healing: HealingService,
    private readonly pools: PoolSync,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.role === 'api' || !this.config.managerTimer) return;
    this.timer = setInterval(() => void this.run(), this.config.healIntervalMs);
  }

  onApplicationShutdown(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }

  async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      await this.healing.heal();
      await this.pools.sweepRecycle();
    } catch (error) {
      this.logger.error(error instanceof Error ? error : String(error));
    } finally {
      this.running = false;
    }
  }
}
