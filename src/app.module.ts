import {
  DynamicModule,
  Module,
  OnApplicationShutdown,
  Inject,
  Provider,
  type LoggerService,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { ScheduleModule } from '@nestjs/schedule';
import { DataSource } from 'typeorm';
import { AuthGuard } from './common/auth/auth.guard.js';
import { AuthStrategy } from './common/auth/identity.js';
import { Policy } from './common/auth/policy.js';
import { PolicyGuard } from './common/auth/policy.guard.js';
import { RuleSet } from './policy/rule-set.js';
import { NoAuthStrategy } from './common/auth/noauth.strategy.js';
import { TokensStrategy } from './common/auth/tokens.strategy.js';
import { readTokensFile } from './config/tokens-file.js';
import { Clock } from './common/clock.js';
import { ErrorFilter } from './common/error.filter.js';
import { validationPipe } from './common/validation.pipe.js';
import { VersionsController } from './common/versions.controller.js';
import { ConfigModule } from './config/config.module.js';
import type { Config } from './config/config.js';
import type { Database } from './database/data-source.js';
import { EventsModule } from './events/events.module.js';
import { UpkeepModule } from './events/upkeep.module.js';
import { HostsModule } from './hosts/hosts.module.js';
import { SchedulerModule } from './scheduler/scheduler.module.js';
import { LeasesModule } from './leases/leases.module.js';
import { PluginsModule } from './plugins/plugins.module.js';
import { EXTRA_PLUGINS, type ResourcePlugin } from './plugins/resource-plugin.js';
import { COMPUTE_DRIVER, type ComputeDriver } from './compute/compute-driver.js';
import { BuiltinDriver } from './compute/builtin.driver.js';
import { KeystoneClient } from './compute/keystone.client.js';
import { NovaDriver } from './compute/nova.driver.js';
import { KEYSTONE, TrustsService } from './compute/trusts.service.js';
import { KeystoneStrategy } from './compute/keystone.strategy.js';
import { PoolsModule } from './pools/pools.module.js';
import { PowerModule } from './power/power.module.js';
import { ObservabilityModule } from './observability/observability.module.js';
import { NotificationsModule } from './notifications/notifications.module.js';

export interface AppOptions {
  config: Config;
  database: Database;
  clock: Clock;
  /** Resource plugins on offer besides Climate's own; PLUGINS picks the enabled ones. */
  plugins: ResourcePlugin[];
  driver?: ComputeDriver;
  /** The app's logger (null: none), for the access log and the start and stop lines. */
  logger?: LoggerService | null;
  /** Migrations this start applied, for the start line. */
  migrationsApplied?: string[];
}

const DATABASE = Symbol('DATABASE');

function keystoneClient(config: Config): KeystoneClient | null {
  const { url, ...credentials } = config.keystone;
  return url === null ? null : new KeystoneClient({ url, ...credentials });
}

function authStrategy(config: Config, keystone: KeystoneClient | null): AuthStrategy {
  if (config.authStrategy === 'tokens') {
    return new TokensStrategy(readTokensFile(config.authTokensFile as string));
  }
  if (config.authStrategy === 'keystone') {
    return new KeystoneStrategy(keystone as KeystoneClient, {
      cacheSeconds: config.tokenCacheSeconds,
      cacheEntries: config.tokenCacheEntries,
    });
  }
  return new NoAuthStrategy();
}

function computeDriver(
  config: Config,
  keystone: KeystoneClient | null,
  clock: Clock,
): ComputeDriver {
  if (config.computeDriver === 'nova')
    return new NovaDriver(
      keystone as KeystoneClient,
      config.novaUrl,
      config.placementUrl,
      config.novaActionTimeoutSeconds * 1000,
      config.freepoolName,
    );
  return new BuiltinDriver(clock, config.builtinBootSeconds * 1000);
}

/** Closes the database after everything else has shut down. */
class DatabaseCloser implements OnApplicationShutdown {
  constructor(@Inject(DATABASE) private readonly database: Database) {}
  async onApplicationShutdown(): Promise<void> {
    await this.database.close();
  }
}

@Module({})
export class AppModule {
  static forRoot(options: AppOptions): DynamicModule {
    const keystone = keystoneClient(options.config);
    // What this start chose (database, clock, auth, the OpenStack clients and the compute
    // driver, extra plugins): the ground every module stands on, as the configuration is.
    const globals: Provider[] = [
      { provide: DATABASE, useValue: options.database },
      { provide: DataSource, useValue: options.database.dataSource },
      { provide: Clock, useValue: options.clock },
      { provide: AuthStrategy, useValue: authStrategy(options.config, keystone) },
      { provide: KEYSTONE, useValue: keystone },
      {
        provide: COMPUTE_DRIVER,
        useValue: options.driver ?? computeDriver(options.config, keystone, options.clock),
      },
      { provide: EXTRA_PLUGINS, useValue: options.plugins },
      // Checked when the configuration was read: the rules build without problems here.
      { provide: Policy, useValue: new Policy(RuleSet.build(options.config.policyRules).rules) },
      TrustsService,
      DatabaseCloser,
    ];
    return {
      module: AppModule,
      global: true,
      imports: [
        ConfigModule.forRoot(options.config),
        ScheduleModule.forRoot(),
        ObservabilityModule.forRoot({
          logger: options.logger ?? null,
          migrationsApplied: options.migrationsApplied ?? [],
        }),
        PluginsModule,
        UpkeepModule,
        NotificationsModule,
        PoolsModule,
        HostsModule,
        LeasesModule,
        SchedulerModule,
        EventsModule,
        PowerModule,
      ],
      controllers: [VersionsController],
      providers: [
        ...globals,
        { provide: APP_GUARD, useClass: AuthGuard },
        { provide: APP_GUARD, useClass: PolicyGuard },
        { provide: APP_FILTER, useClass: ErrorFilter },
        { provide: APP_PIPE, useValue: validationPipe },
      ],
      exports: globals,
    };
  }
}
