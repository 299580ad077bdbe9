import { type Env, Reader } from './env-reader.js';
import {
  checkBroker,
  checkDatabaseUrl,
  checkPlugins,
  checkServiceUrl,
  checkTokensFile,
  checkTrustProxy,
  isLoopback,
} from './checks.js';
import { readProjectLimitsFile, type ProjectLimitOverride } from './project-limits-file.js';
import { checkWebhooks, type WebhookSettings } from './webhook-settings.js';
import { readPolicyFile } from '../policy/policy-file.js';
import { RuleSet, type RuleOverride } from '../policy/rule-set.js';

/** The service's settings, read once from the environment and validated as a whole. */
export type Role = 'api' | 'manager' | 'all';
export type AuthStrategy = 'noauth' | 'tokens' | 'keystone';
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

export interface Config {
  databaseUrl: string | null;
  /** How long a new database connection (or a free one from the pool) may take. */
  databaseConnectTimeoutMs: number;
  databaseQueryTimeoutMs: number;
  /** Connections in the pool; 0: 10, plus EVENT_CONCURRENCY where the manager runs. */
  databasePoolSize: number;
  dataDir: string;
  host: string;
  port: number;
  /**
   * The ops port (/metrics, /healthz, /readyz): the manager's (default 9464); with
   * ROLE=all only when METRICS_PORT is set (else on PORT); null: none.
   */
  metricsHost: string;
  metricsPort: number | null;
  /** Proxies whose X-Forwarded-Proto/-For/-Host are believed (express `trust proxy`). */
  trustProxy: string[];
  role: Role;
  authStrategy: AuthStrategy;
  authTokensFile: string | null;
  /** noauth on a non-loopback HOST, which makes anyone who can reach it admin. */
  noauthAllowRemote: boolean;
  /** POLICY_FILE's rules (docs/operations.md, Who may do what); none: the defaults. */
  policyRules: RuleOverride[];
  /** Longest a Keystone token validation is reused, and how many are kept. */
  tokenCacheSeconds: number;
  tokenCacheEntries: number;
  eventPollMs: number;
  eventMaxAttempts: number;
  eventClaimTtlMs: number;
  eventConcurrency: number;
  pluginTimeoutMs: number;
  /** Poll on a timer; tests turn it off and call tick() themselves. */
  managerTimer: boolean;
  minutesBeforeEndLease: number;
  plugins: string[];
  computeDriver: 'builtin' | 'nova';
  keystone: {
    url: string | null;
    username: string;
    password: string;
    project: string;
    domain: string;
    /** Longest a Keystone call may take. */
    timeoutMs: number;
  };
  novaUrl: string | null;
  placementUrl: string | null;
  /**
   * Nova's name of the freepool aggregate (Blazar's `[nova]/aggregate_freepool_name`):
   * Climate's `freepool` is that aggregate in Nova, so a site coming from Blazar keeps it.
   */
  novaFreepoolName: string;
  novaActionTimeoutSeconds: number;
  cleaningTimeMinutes: number;
  topologyLevels: string[];
  /** HOST_WEIGHTS: what a host costs placement per property it has (keeps scarce hosts free). */
  hostWeights: Map<string, number>;
  beforeEndAction: '' | 'snapshot';
  recycleGraceMinutes: number;
  healIntervalMs: number;
  /** How often the manager shelves servers booted for a later lease (instance-upkeep). */
  shelvePollMs: number;
  /** A lease's hosts are prepared this long before its start (docs/power.md); 0: at it. */
  provisioningLeadMinutes: number;
  /** The power plan (docs/power.md): idle hosts of the reservation pool powered off. */
  power: {
    /** POWER_PLAN=on; off, every host is kept (or put back) on. */
    plan: boolean;
    offIdleMinutes: number;
    maxTransitionsPerMinute: number;
    /** How long a host takes to power on and boot, as the plan counts it. */
    bootSeconds: number;
    intervalMs: number;
  };
  /** The builtin driver's simulated boot time. */
  builtinBootSeconds: number;
  cpuAllocationRatio: number;
  ramAllocationRatio: number;
  diskAllocationRatio: number;
  maxAlternates: number;
  logLevel: LogLevel;
  /** Blazar-format notifications on RabbitMQ (docs/notifications.md); url null is off. */
  notify: {
    url: string | null;
    exchange: string;
    topics: string[];
    publisherId: string;
    /** A manager with no NOTIFY_URL and no WEBHOOK_URLS deletes outbox rows older than this. */
    retentionHours: number;
    /** oslo.messaging's amqp_durable_queues: the exchange and queues durable. */
    durable: boolean;
  };
  /** Host failures from Nova's `service.update` notifications (docs/openstack.md); url null is off. */
  novaNotify: {
    url: string | null;
    exchange: string;
    topics: string[];
    queue: string;
    /** Nova's amqp_durable_queues, for Nova's exchange (default NOTIFY_DURABLE). */
    durable: boolean;
  };
  /** Usage enforcement (docs/usage-limits.md); -1 is no limit. */
  enforcement: {
    maxLeaseDurationSeconds: number;
    maxLeaseDurationExemptProjects: string[];
    externalServiceUrl: string | null;
    externalServiceToken: string;
    externalServiceTimeoutMs: number;
    projectMaxHosts: number;
    projectMaxHostHours: number;
    projectHostHoursPeriodDays: number;
    projectLimits: Record<string, ProjectLimitOverride>;
  };
  /** Lease notifications as signed HTTP POSTs (docs/notifications.md); no URLs is off. */
  webhooks: WebhookSettings;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(
      `Invalid configuration; fix these environment variables and start again:\n` +
        problems.map((p) => `  - ${p}`).join('\n'),
    );
    this.name = 'ConfigError';
  }
}

/** The resource types Climate ships a plugin for. */
export const BUILTIN_RESOURCE_TYPES: readonly string[] = [
  'physical:host',
  'virtual:instance',
  'virtual:floatingip',
  'flavor:instance',
];

/** PLUGINS unset: every type but flavor:instance, which needs Nova's flavors (operators add it). */
export const DEFAULT_PLUGINS: readonly string[] = BUILTIN_RESOURCE_TYPES.filter(
  (type) => type !== 'flavor:instance',
);

export interface LoadOptions {
  /** The resource types PLUGINS may name: Climate's own, plus any extra plugins given. */
  resourceTypes?: readonly string[];
}

/** Reads every setting; throws one ConfigError that names every bad variable. */
export function loadConfig(env: Env, options: LoadOptions = {}): Config {
  const r = new Reader(env);
  const config: Config = {
    databaseUrl: r.optional('DATABASE_URL'),
    databaseConnectTimeoutMs: r.int('DATABASE_CONNECT_TIMEOUT_MS', 5000, 100, 600_000),
    databaseQueryTimeoutMs: r.int('DATABASE_QUERY_TIMEOUT_MS', 10_000, 100, 3_600_000),
    databasePoolSize: r.int('DATABASE_POOL_SIZE', 0, 0, 1000),
    dataDir: r.text('DATA_DIR', './data'),
    host: r.text('HOST', '127.0.0.1'),
    port: r.int('PORT', 1234, 0, 65535),
    metricsHost: r.text('METRICS_HOST', r.text('HOST', '127.0.0.1')),
    metricsPort: r.int('METRICS_PORT', 9464, 0, 65535),
    trustProxy: r.list('TRUST_PROXY', []),
    role: r.oneOf('ROLE', 'all', ['api', 'manager', 'all'] as const),
    authStrategy: r.oneOf('AUTH_STRATEGY', 'noauth', ['noauth', 'tokens', 'keystone'] as const),
    authTokensFile: r.optional('AUTH_TOKENS_FILE'),
    noauthAllowRemote:
      r.oneOf('NOAUTH_ALLOW_REMOTE', 'false', ['true', 'false'] as const) === 'true',
    policyRules: [],
    tokenCacheSeconds: r.int('TOKEN_CACHE_SECONDS', 300, 0, 86_400),
    tokenCacheEntries: r.int('TOKEN_CACHE_ENTRIES', 10_000, 1, 10_000_000),
    eventPollMs: r.int('EVENT_POLL_MS', 1000, 10, 3_600_000),
    eventMaxAttempts: r.int('EVENT_MAX_ATTEMPTS', 5, 1, 100),
    eventClaimTtlMs: r.int('EVENT_CLAIM_TTL_MS', 300_000, 1000, 86_400_000),
    eventConcurrency: r.int('EVENT_CONCURRENCY', 16, 1, 1000),
    pluginTimeoutMs: r.int('PLUGIN_TIMEOUT_MS', 600_000, 100, 86_400_000),
    managerTimer: true,
    minutesBeforeEndLease: r.int('MINUTES_BEFORE_END_LEASE', 60, 0, 525_600),
    plugins: r.list('PLUGINS', [...DEFAULT_PLUGINS]),
    computeDriver: r.oneOf('COMPUTE_DRIVER', 'builtin', ['builtin', 'nova'] as const),
    keystone: {
      url: r.optional('KEYSTONE_URL'),
      username: r.text('SERVICE_USERNAME', 'climate'),
      password: r.text('SERVICE_PASSWORD', ''),
      project: r.text('SERVICE_PROJECT', 'service'),
      domain: r.text('SERVICE_DOMAIN', 'Default'),
      timeoutMs: r.int('KEYSTONE_TIMEOUT_MS', 10_000, 100, 600_000),
    },
    novaUrl: r.optional('NOVA_URL'),
    placementUrl: r.optional('PLACEMENT_URL'),
    novaFreepoolName: r.text('NOVA_FREEPOOL_NAME', 'freepool'),
    novaActionTimeoutSeconds: r.int('NOVA_ACTION_TIMEOUT_SECONDS', 300, 1, 86_400),
    cleaningTimeMinutes: r.int('CLEANING_TIME_MINUTES', 0, 0, 10_080),
    topologyLevels: r.list('TOPOLOGY_LEVELS', ['room', 'row', 'rack']),
    hostWeights: hostWeights(r),
    beforeEndAction: r.oneOf('BEFORE_END_ACTION', '', ['', 'snapshot'] as const),
    recycleGraceMinutes: r.int('RECYCLE_GRACE_MINUTES', 60, 0, 10_080),
    healIntervalMs: r.int('HEAL_INTERVAL_MS', 60_000, 1000, 86_400_000),
    shelvePollMs: r.int('SHELVE_POLL_MS', 5000, 100, 3_600_000),
    provisioningLeadMinutes: r.int('PROVISIONING_LEAD_MINUTES', 0, 0, 10_080),
    power: {
      plan: r.oneOf('POWER_PLAN', 'off', ['on', 'off'] as const) === 'on',
      offIdleMinutes: r.int('POWER_OFF_IDLE_MINUTES', 60, 0, 525_600),
      maxTransitionsPerMinute: r.int('POWER_MAX_TRANSITIONS_PER_MINUTE', 10, 1, 100_000),
      bootSeconds: r.int('POWER_BOOT_SECONDS', 600, 0, 86_400),
      intervalMs: r.int('POWER_INTERVAL_MS', 15_000, 1000, 3_600_000),
    },
    builtinBootSeconds: r.int('BUILTIN_BOOT_SECONDS', 60, 0, 86_400),
    cpuAllocationRatio: r.float('CPU_ALLOCATION_RATIO', 4, 0.1, 1000),
    ramAllocationRatio: r.float('RAM_ALLOCATION_RATIO', 1, 0.1, 1000),
    diskAllocationRatio: r.float('DISK_ALLOCATION_RATIO', 1, 0.1, 1000),
    maxAlternates: r.int('MAX_ALTERNATES', 3, 0, 100),
    logLevel: r.oneOf('LOG_LEVEL', 'info', ['error', 'warn', 'info', 'debug'] as const),
    notify: {
      url: r.optional('NOTIFY_URL'),
      exchange: r.text('NOTIFY_EXCHANGE', 'openstack'),
      topics: r.list('NOTIFY_TOPICS', ['notifications']),
      publisherId: r.text('NOTIFY_PUBLISHER_ID', 'climate.lease'),
      retentionHours: r.int('NOTIFY_RETENTION_HOURS', 72, 1, 87_600),
      durable: r.oneOf('NOTIFY_DURABLE', 'false', ['true', 'false'] as const) === 'true',
    },
    novaNotify: {
      url: r.optional('NOVA_NOTIFY_URL'),
      exchange: r.text('NOVA_NOTIFY_EXCHANGE', 'nova'),
      topics: r.list('NOVA_NOTIFY_TOPICS', ['versioned_notifications']),
      queue: r.text('NOVA_NOTIFY_QUEUE', 'climate-nova-notifications'),
      durable:
        r.oneOf('NOVA_NOTIFY_DURABLE', env.NOTIFY_DURABLE === 'true' ? 'true' : 'false', [
          'true',
          'false',
        ] as const) === 'true',
    },
    enforcement: {
      maxLeaseDurationSeconds: r.int('MAX_LEASE_DURATION_SECONDS', -1, -1),
      maxLeaseDurationExemptProjects: r.list('MAX_LEASE_DURATION_EXEMPT_PROJECTS', []),
      externalServiceUrl: r.optional('EXTERNAL_SERVICE_URL'),
      externalServiceToken: r.text('EXTERNAL_SERVICE_TOKEN', ''),
      externalServiceTimeoutMs: r.int('EXTERNAL_SERVICE_TIMEOUT_MS', 10_000, 100, 600_000),
      projectMaxHosts: r.int('PROJECT_MAX_HOSTS', -1, -1),
      projectMaxHostHours: r.int('PROJECT_MAX_HOST_HOURS', -1, -1),
      projectHostHoursPeriodDays: r.int('PROJECT_HOST_HOURS_PERIOD_DAYS', 30, 1, 3660),
      projectLimits: {},
    },
    webhooks: {
      urls: r.list('WEBHOOK_URLS', []),
      secret: r.text('WEBHOOK_SECRET', ''),
      timeoutMs: r.int('WEBHOOK_TIMEOUT_SECONDS', 10, 1, 300) * 1000,
    },
  };
  // One port unless asked for two: ROLE=all serves the ops endpoints on PORT already.
  const askedForOps = r.optional('METRICS_PORT') !== null;
  if (config.role === 'api' || (config.role === 'all' && !askedForOps)) config.metricsPort = null;
  const problems = r.problems;
  checkDatabaseUrl(config.databaseUrl, problems);
  checkBroker('NOTIFY', config.notify, 'notifications', problems);
  // Nova's own transport_url (rabbit://) works as it is.
  checkBroker('NOVA_NOTIFY', config.novaNotify, 'versioned_notifications', problems, [
    'amqp:',
    'amqps:',
    'rabbit:',
  ]);
  checkPlugins(config.plugins, options.resourceTypes ?? BUILTIN_RESOURCE_TYPES, problems);
  checkTrustProxy(config.trustProxy, problems);
  checkServiceUrl('KEYSTONE_URL', config.keystone.url, problems);
  checkServiceUrl('NOVA_URL', config.novaUrl, problems);
  checkServiceUrl('PLACEMENT_URL', config.placementUrl, problems);
  checkServiceUrl('EXTERNAL_SERVICE_URL', config.enforcement.externalServiceUrl, problems);
  checkWebhooks(config.webhooks, problems);
  if (config.enforcement.maxLeaseDurationSeconds === 0) {
    problems.push('MAX_LEASE_DURATION_SECONDS=0: would refuse every lease; use -1 for no limit');
  }
  const limitsFile = r.optional('PROJECT_LIMITS_FILE');
  if (limitsFile !== null) {
    const read = readProjectLimitsFile(limitsFile);
    config.enforcement.projectLimits = read.limits;
    problems.push(...read.problems);
  }
  const policyFile = r.optional('POLICY_FILE');
  if (policyFile !== null) {
    const read = readPolicyFile(policyFile);
    config.policyRules = read.overrides;
    problems.push(...read.problems);
  }
  problems.push(...RuleSet.build(config.policyRules).problems);
  if (config.authStrategy === 'tokens' && config.authTokensFile === null) {
    problems.push('AUTH_TOKENS_FILE: required when AUTH_STRATEGY=tokens');
  } else if (config.authStrategy === 'tokens') {
    checkTokensFile(config.authTokensFile as string, problems);
  }
  const listens = config.role !== 'manager';
  if (
    listens &&
    config.authStrategy === 'noauth' &&
    !config.noauthAllowRemote &&
    !isLoopback(config.host)
  ) {
    problems.push(
      `HOST=${config.host}: with AUTH_STRATEGY=noauth anyone who reaches this address is admin; ` +
        'listen on 127.0.0.1, use AUTH_STRATEGY=tokens or keystone, or set ' +
        'NOAUTH_ALLOW_REMOTE=true if something in front of Climate checks callers',
    );
  }
  if (config.role === 'all' && config.metricsPort === config.port && config.port !== 0) {
    problems.push(
      `METRICS_PORT=${config.metricsPort}: the ops port must differ from PORT with ROLE=all`,
    );
  }
  const needsKeystone = config.authStrategy === 'keystone' || config.computeDriver === 'nova';
  if (needsKeystone && config.keystone.url === null) {
    problems.push('KEYSTONE_URL: required with AUTH_STRATEGY=keystone or COMPUTE_DRIVER=nova');
  }
  if (needsKeystone && config.keystone.password === '') {
    problems.push('SERVICE_PASSWORD: required with AUTH_STRATEGY=keystone or COMPUTE_DRIVER=nova');
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** The pool fits the manager's concurrency: each running event holds a connection at times. */
export function databasePoolSize(config: Config): number {
  if (config.databasePoolSize > 0) return config.databasePoolSize;
  return config.role === 'api' ? 10 : 10 + config.eventConcurrency;
}

/** HOST_WEIGHTS: `property=weight` pairs, weights whole numbers from 0 to 1,000,000. */
function hostWeights(r: Reader): Map<string, number> {
  const weights = new Map<string, number>();
  for (const pair of r.list('HOST_WEIGHTS', ['gpu=10'])) {
    const match = /^([A-Za-z0-9_:.-]{1,64})=(\d{1,7})$/.exec(pair);
    if (match === null || Number(match[2]) > 1_000_000) {
      r.problems.push(`HOST_WEIGHTS=${pair}: must be property=weight, a weight from 0 to 1000000`);
    } else {
      weights.set(match[1], Number(match[2]));
    }
  }
  return weights;
}
