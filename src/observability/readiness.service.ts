import { performance } from 'node:perf_hooks';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  HealthIndicatorService,
  type HealthCheckAttempt,
  type HealthIndicatorFunction,
} from '@nestjs/terminus';
import { DataSource } from 'typeorm';
import type { KeystoneClient } from '../compute/keystone.client.js';
import { KEYSTONE } from '../compute/trusts.service.js';
import { CONFIG } from '../config/config.module.js';
import type { Config } from '../config/config.js';
import { errorMessage, SingleFlight, within } from './bounded.js';
import { ManagerPulse, pollProblem, type PulseState } from './manager-pulse.js';
import { runsManager, runsManagerTimers } from '../config/roles.js';

interface DatabaseState {
  /** A standby (pg_is_in_recovery) or a read-only default: no event can be claimed. */
  readOnly: boolean;
}

/**
 * Why this manager cannot claim events, or null when it can: its polls finish without
 * error (when it polls on a timer) and the database takes writes.
 */
export function managerProblem(
  pulse: PulseState | null,
  database: DatabaseState,
  now: number,
  staleAfterMs: number,
): string | null {
  if (database.readOnly) return 'the database is read-only (a standby?); events cannot be claimed';
  return pulse === null ? null : pollProblem(pulse, now, staleAfterMs);
}

/**
 * What a probe may say about a failure: probes are public, so no URL, host or query text
 * (the full reason is in the log), just the kind of failure.
 */
export function publicReason(error: unknown): string {
  const e = error as {
    name?: unknown;
    code?: unknown;
    status?: unknown;
    cause?: { code?: unknown };
  } | null;
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'no answer in time';
  const code = typeof e?.code === 'string' ? e.code : e?.cause?.code;
  if (typeof code === 'string') return `failed (${code})`;
  return typeof e?.status === 'number' ? `failed (${e.status})` : 'failed';
}

class ProbeFailed extends Error {
  /** Expected for now (a manager that has not polled yet): not worth a warning. */
  constructor(
    message: string,
    readonly quiet = false,
  ) {
    super(message);
  }
}

/**
 * The readiness checks: the database answers in DATABASE_CONNECT_TIMEOUT_MS; Keystone,
 * Nova and Placement answer (when configured) in KEYSTONE_TIMEOUT_MS; where the manager
 * runs, its last poll finished without error lately and the database takes writes.
 */
@Injectable()
export class ReadinessChecks {
  private readonly logger = new Logger('health');
  private readonly database = new SingleFlight<DatabaseState>();
  /** Checks that are down, so that a failure is logged once, not on every probe. */
  private readonly down = new Set<string>();

  constructor(
    private readonly health: HealthIndicatorService,
    private readonly dataSource: DataSource,
    private readonly pulse: ManagerPulse,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(KEYSTONE) private readonly keystone: KeystoneClient | null,
  ) {}

  indicators(): HealthIndicatorFunction[] {
    const dbTimeout = this.config.databaseConnectTimeoutMs;
    // One query serves both checks; one at a time however many probes come.
    const database = this.database.run(() => this.readDatabase());
    database.catch(() => undefined);
    const checks: HealthIndicatorFunction[] = [
      this.check('database', dbTimeout, async () => {
        await database;
      }),
    ];
    if (runsManager(this.config)) {
      checks.push(
        this.check('manager', dbTimeout, async () => {
          const pulse = runsManagerTimers(this.config) ? this.pulse.snapshot() : null;
          const now = performance.now();
          const problem = managerProblem(pulse, await database, now, this.staleAfterMs());
          if (problem === null) return;
          const starting =
            pulse?.lastPoll === null && now - (pulse.startedAt ?? now) <= this.staleAfterMs();
          throw new ProbeFailed(problem, starting);
        }),
      );
    }
    const timeout = this.config.keystone.timeoutMs;
    const keystoneUrl = this.config.keystone.url;
    if (keystoneUrl !== null) {
      checks.push(this.check('keystone', timeout, (signal) => answers(keystoneUrl, signal)));
    }
    if (this.config.computeDriver === 'nova') {
      const { novaUrl, placementUrl } = this.config;
      checks.push(
        this.check('nova', timeout, async (signal) =>
          answers(await this.endpoint(novaUrl, 'compute'), signal),
        ),
      );
      if (placementUrl !== null) {
        checks.push(this.check('placement', timeout, (signal) => answers(placementUrl, signal)));
      }
    }
    return checks;
  }

  /** Polls finish every EVENT_POLL_MS; a few missed, or one stuck on the database, is not ready. */
  staleAfterMs(): number {
    return 3 * this.config.eventPollMs + this.config.databaseConnectTimeoutMs;
  }

  private async readDatabase(): Promise<DatabaseState> {
    const rows = await this.dataSource.query<{ read_only: boolean }[]>(
      `SELECT pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS read_only`,
    );
    return { readOnly: rows[0]?.read_only === true };
  }

  private async endpoint(configured: string | null, type: string): Promise<string> {
    if (configured !== null) return configured;
    if (this.keystone === null) throw new ProbeFailed('no Keystone to find it in');
    return this.keystone.endpoint(type);
  }

  /**
   * One terminus check, bounded by `timeoutMs`. What it says is public (see publicReason);
   * the full reason goes to the log when the check turns down.
   */
  private check(
    key: string,
    timeoutMs: number,
    probe: (signal: AbortSignal) => Promise<void>,
  ): HealthCheckAttempt {
    return (
      this.health
        .check(key)
        .attempt(async ({ signal }) => {
          try {
            const bounded = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
            await within(probe(bounded), timeoutMs, key);
            if (this.down.delete(key)) this.logger.log({ msg: `${key} ready again` });
          } catch (error) {
            const reason = error instanceof ProbeFailed ? error.message : publicReason(error);
            const quiet = error instanceof ProbeFailed && error.quiet;
            if (!quiet && !this.down.has(key)) {
              this.logger.warn({ msg: `not ready: ${key}`, reason: errorMessage(error) });
              this.down.add(key);
            }
            throw new ProbeFailed(reason);
          }
        })
        // Only a backstop: `within` answers first, and logs why.
        .withTimeout(timeoutMs + 1000)
    );
  }
}

/** An HTTP service answers: any status below 500 (a 401 included). */
async function answers(url: string, signal: AbortSignal): Promise<void> {
  const res = await fetch(url, { method: 'GET', signal, redirect: 'manual' });
  await res.body?.cancel();
  if (res.status >= 500) throw new ProbeFailed(`answered ${res.status}`);
}
