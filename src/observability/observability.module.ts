import { DynamicModule, Global, Module, type LoggerService } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController } from './health.controller.js';
import { Lifecycle, MIGRATIONS_APPLIED } from './lifecycle.js';
import { ManagerPulse } from './manager-pulse.js';
import { Metrics } from './metrics.js';
import { MetricsService } from './metrics.service.js';
import { APP_LOGGER, OpsServer } from './ops-server.js';
import { PeriodicJobs } from './periodic-jobs.js';
import { ReadinessChecks } from './readiness.service.js';

export interface ObservabilityOptions {
  /** The app's logger (null: none), for the access log and the start and stop lines. */
  logger: LoggerService | null;
  /** Migrations this start applied, for the start line. */
  migrationsApplied: string[];
}

/**
 * What operators watch: Prometheus metrics (Metrics is global, for the services that
 * count), liveness and readiness, the ops port and the start and stop lines.
 */
@Global()
@Module({})
export class ObservabilityModule {
  static forRoot(options: ObservabilityOptions): DynamicModule {
    return {
      module: ObservabilityModule,
      // Readiness failures are logged once, by ReadinessChecks, not on every probe.
      imports: [TerminusModule.forRoot({ logger: false })],
      controllers: [HealthController],
      providers: [
        { provide: APP_LOGGER, useValue: options.logger },
        { provide: MIGRATIONS_APPLIED, useValue: options.migrationsApplied },
        Metrics,
        MetricsService,
        ManagerPulse,
        ReadinessChecks,
        OpsServer,
        Lifecycle,
        PeriodicJobs,
      ],
      exports: [Metrics, ManagerPulse, PeriodicJobs],
    };
  }
}
