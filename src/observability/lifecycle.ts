import { resolve } from 'node:path';
import { BeforeApplicationShutdown, Inject, Injectable, type LoggerService } from '@nestjs/common';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { APP_LOGGER } from './ops-server.js';
import { runsManager } from '../config/roles.js';

export const MIGRATIONS_APPLIED = Symbol('MIGRATIONS_APPLIED');

export interface Listening {
  /** The API's address (roles api and all). */
  api: string | null;
  /** METRICS_PORT's address (manager; all when METRICS_PORT is set). */
  ops: string | null;
}

/**
 * Which database, for the log: the embedded one's directory, or PostgreSQL's host, port
 * and database name. Never the URL: it may carry the password.
 */
export function describeDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'>,
): Record<string, unknown> {
  if (config.databaseUrl === null) return { embedded: true, data_dir: resolve(config.dataDir) };
  const url = new URL(config.databaseUrl);
  const host = url.hostname !== '' ? url.hostname : (url.searchParams.get('host') ?? 'localhost');
  return {
    host,
    port: url.port === '' ? 5432 : Number(url.port),
    database: decodeURIComponent(url.pathname.replace(/^\//, '')),
  };
}

/**
 * Whether this replica sends notifications (RabbitMQ) and webhooks. Every replica writes
 * them to the outbox; an API replica leaves the sending to the managers.
 */
export function describeNotifications(
  config: Pick<Config, 'role' | 'notify' | 'webhooks'>,
): Record<string, string> {
  if (!runsManager(config)) return { notifications: 'outbox only: the managers send them' };
  const receivers = config.webhooks.urls.length;
  return {
    notifications: config.notify.url === null ? 'off' : 'on',
    webhooks: receivers === 0 ? 'off' : `on (${receivers} receiver${receivers === 1 ? '' : 's'})`,
  };
}

/** The start and stop lines of the log. */
@Injectable()
export class Lifecycle implements BeforeApplicationShutdown {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    @Inject(MIGRATIONS_APPLIED) private readonly migrations: string[],
    @Inject(APP_LOGGER) private readonly logger: LoggerService | null,
  ) {}

  started(listening: Listening): void {
    this.logger?.log(
      {
        msg: 'climate started',
        role: this.config.role,
        api: listening.api ?? undefined,
        ops: listening.ops ?? undefined,
        database: describeDatabase(this.config),
        ...describeNotifications(this.config),
        migrations_applied: this.migrations,
        pid: process.pid,
      },
      'climate',
    );
  }

  beforeApplicationShutdown(signal?: string): void {
    this.logger?.log({ msg: 'climate stopping', role: this.config.role, signal }, 'climate');
  }
}
