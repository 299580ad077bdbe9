import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './config.js';

const scratch = mkdtempSync(join(tmpdir(), 'climate-config-'));
const tokensFile = join(scratch, 'tokens.json');
writeFileSync(
  tokensFile,
  JSON.stringify({ t1: { user_id: 'u', project_id: 'p', roles: ['admin'] } }),
);

const problemsOf = (env: Record<string, string>, types?: string[]): string[] => {
  try {
    loadConfig(env, { resourceTypes: types });
    return [];
  } catch (e) {
    return (e as ConfigError).problems;
  }
};

describe('loadConfig', () => {
  it('should apply the documented defaults when the environment is empty', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      databaseUrl: null,
      host: '127.0.0.1',
      port: 1234,
      role: 'all',
      authStrategy: 'noauth',
      eventPollMs: 1000,
      minutesBeforeEndLease: 60,
      plugins: ['physical:host', 'virtual:instance', 'virtual:floatingip'],
      logLevel: 'info',
    });
  });

  it('should read every variable when they are valid', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u@db:5432/climate',
      HOST: '0.0.0.0',
      PORT: '8080',
      ROLE: 'manager',
      EVENT_POLL_MS: '250',
      EVENT_MAX_ATTEMPTS: '3',
      MINUTES_BEFORE_END_LEASE: '0',
      PLUGINS: 'physical:host, virtual:instance',
      LOG_LEVEL: 'debug',
    });
    expect(config).toMatchObject({
      databaseUrl: 'postgres://u@db:5432/climate',
      host: '0.0.0.0',
      port: 8080,
      role: 'manager',
      eventPollMs: 250,
      eventMaxAttempts: 3,
      minutesBeforeEndLease: 0,
      plugins: ['physical:host', 'virtual:instance'],
      logLevel: 'debug',
    });
  });

  it('should name every bad variable in one error when several are wrong', () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: 'eighty',
        ROLE: 'worker',
        AUTH_STRATEGY: 'tokens',
        EVENT_POLL_MS: '-5',
        DATABASE_URL: 'mysql://x',
        LOG_LEVEL: 'loud',
      });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const names = (error as ConfigError).problems.map((p) => p.split(/[=:]/)[0]);
    expect(names.sort()).toEqual(
      ['AUTH_TOKENS_FILE', 'DATABASE_URL', 'EVENT_POLL_MS', 'LOG_LEVEL', 'PORT', 'ROLE'].sort(),
    );
  });
  describe('AUTH_STRATEGY=noauth on a non-loopback HOST', () => {
    it.each(['0.0.0.0', '::', '10.0.0.5', 'climate.example.org', '::ffff:10.0.0.5'])(
      'should refuse HOST=%s when noauth would make anyone on the network admin',
      (host) => {
        const problems = problemsOf({ HOST: host });
        expect(problems).toHaveLength(1);
        expect(problems[0]).toMatch(new RegExp(`^HOST=${host.replace(/\./g, '\\.')}: `));
        expect(problems[0]).toContain('NOAUTH_ALLOW_REMOTE=true');
      },
    );

    it.each(['127.0.0.1', '127.8.9.10', '::1', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1'])(
      'should accept HOST=%s when it is a loopback address',
      (host) => {
        expect(loadConfig({ HOST: host }).host).toBe(host);
      },
    );

    it('should accept a non-loopback HOST when the operator sets NOAUTH_ALLOW_REMOTE=true', () => {
      const config = loadConfig({ HOST: '0.0.0.0', NOAUTH_ALLOW_REMOTE: 'true' });
      expect(config).toMatchObject({ host: '0.0.0.0', noauthAllowRemote: true });
    });

    it('should accept a non-loopback HOST when the strategy checks tokens', () => {
      const config = loadConfig({
        HOST: '0.0.0.0',
        AUTH_STRATEGY: 'tokens',
        AUTH_TOKENS_FILE: tokensFile,
      });
      expect(config.host).toBe('0.0.0.0');
    });

    it('should list the HOST problem with every other bad variable in the one error', () => {
      const problems = problemsOf({ HOST: '0.0.0.0', NOAUTH_ALLOW_REMOTE: 'yes', PORT: 'x' });
      expect(problems.map((p) => p.split(/[=:]/)[0]).sort()).toEqual([
        'HOST',
        'NOAUTH_ALLOW_REMOTE',
        'PORT',
      ]);
    });
  });

  it('should read the outage timeouts when they are set', () => {
    const config = loadConfig({
      KEYSTONE_TIMEOUT_MS: '2500',
      DATABASE_CONNECT_TIMEOUT_MS: '750',
      DATABASE_QUERY_TIMEOUT_MS: '1500',
    });
    expect(config.keystone.timeoutMs).toBe(2500);
    expect(config.databaseConnectTimeoutMs).toBe(750);
    expect(config.databaseQueryTimeoutMs).toBe(1500);
    expect(loadConfig({})).toMatchObject({
      databaseConnectTimeoutMs: 5000,
      databaseQueryTimeoutMs: 10_000,
      keystone: { timeoutMs: 10_000 },
    });
  });

  describe('settings checked before anything opens', () => {
    it('should refuse a PLUGINS entry that no plugin provides, naming the choices', () => {
      const problems = problemsOf({ PLUGINS: 'physical:host,virtual:instances' });
      expect(problems).toEqual([
        'PLUGINS=physical:host,virtual:instances: virtual:instances is not a resource type ' +
          '(use physical:host, virtual:instance, virtual:floatingip, flavor:instance)',
      ]);
    });

    it('should refuse a resource type listed twice in PLUGINS', () => {
      expect(problemsOf({ PLUGINS: 'physical:host, physical:host' })).toEqual([
        'PLUGINS=physical:host,physical:host: physical:host is listed twice',
      ]);
    });

    it('should accept the types of extra plugins when the caller offers them', () => {
      expect(problemsOf({ PLUGINS: 'test:x' }, ['test:x'])).toEqual([]);
      expect(problemsOf({ PLUGINS: 'test:x' })).toHaveLength(1);
    });

    it.each([
      ['KEYSTONE_URL', 'keystone:5000'],
      ['NOVA_URL', 'ftp://nova/v2.1'],
      ['PLACEMENT_URL', 'not a url'],
    ])('should refuse %s=%s when it is not an http(s) URL', (name, value) => {
      expect(problemsOf({ [name]: value })).toEqual([
        `${name}=${value}: must be an http:// or https:// URL`,
      ]);
    });

    it('should refuse a tokens file that is missing or malformed, with the reason and no stack', () => {
      const broken = join(scratch, 'broken.json');
      writeFileSync(broken, '{"t": {"user_id": "u"}}');
      const missing = problemsOf({
        AUTH_STRATEGY: 'tokens',
        AUTH_TOKENS_FILE: join(scratch, 'nope.json'),
      });
      expect(missing).toHaveLength(1);
      expect(missing[0]).toMatch(/^AUTH_TOKENS_FILE .*nope\.json: cannot read it as JSON \(ENOENT/);
      expect(problemsOf({ AUTH_STRATEGY: 'tokens', AUTH_TOKENS_FILE: broken })).toEqual([
        `AUTH_TOKENS_FILE ${broken}: token t… needs user_id, project_id, roles[]`,
      ]);
      expect(missing[0]).not.toContain('    at ');
    });

    it('should name every bad setting, PLUGINS and the tokens file included, in one error', () => {
      const problems = problemsOf({
        PLUGINS: 'nope',
        AUTH_STRATEGY: 'tokens',
        AUTH_TOKENS_FILE: join(scratch, 'nope.json'),
        NOVA_URL: 'x',
        PORT: '-1',
      });
      expect(problems.map((p) => p.split(/[= :]/)[0]).sort()).toEqual([
        'AUTH_TOKENS_FILE',
        'NOVA_URL',
        'PLUGINS',
        'PORT',
      ]);
    });
  });

  describe('POLICY_FILE and the token cache', () => {
    it('should read the rules of a policy file, and default the token cache to 300 s', () => {
      const file = join(scratch, 'policy.yaml');
      writeFileSync(file, '# site\n"blazar:oshosts:get": "rule:admin or role:member"\n');
      const config = loadConfig({ POLICY_FILE: file });
      expect(config.policyRules).toEqual([
        {
          name: 'blazar:oshosts:get',
          check: 'rule:admin or role:member',
          where: 'POLICY_FILE policy.yaml:2',
        },
      ]);
      expect(config).toMatchObject({ tokenCacheSeconds: 300, tokenCacheEntries: 10_000 });
    });

    it('should list each bad rule with its line among the other bad settings', () => {
      const file = join(scratch, 'bad-policy.yaml');
      writeFileSync(file, '"blazar:leases:get": "role:reader and"\n"x": "rule:y"\n');
      expect(problemsOf({ POLICY_FILE: file, TOKEN_CACHE_SECONDS: '-1' })).toEqual([
        'TOKEN_CACHE_SECONDS=-1: must be a whole number from 0 to 86400',
        'POLICY_FILE bad-policy.yaml:1: blazar:leases:get: "role:reader and" does not parse: ends where a check was expected',
        'POLICY_FILE bad-policy.yaml:2: x: rule:y names no rule',
      ]);
      expect(problemsOf({ POLICY_FILE: join(scratch, 'none.yaml') })).toEqual([
        expect.stringMatching(/^POLICY_FILE=.*none\.yaml: cannot read it \(ENOENT/),
      ]);
    });
  });

  describe('METRICS_PORT', () => {
    it("should default the manager's ops port to 9464 on HOST when it is unset", () => {
      expect(loadConfig({ HOST: '127.0.0.2', ROLE: 'manager' })).toMatchObject({
        metricsPort: 9464,
        metricsHost: '127.0.0.2',
      });
    });

    it('should open no ops port of its own with ROLE=all or api when METRICS_PORT is unset', () => {
      expect(loadConfig({}).metricsPort).toBeNull();
      expect(loadConfig({ ROLE: 'all', METRICS_PORT: '' }).metricsPort).toBeNull();
      expect(loadConfig({ ROLE: 'api', METRICS_PORT: '9100' }).metricsPort).toBeNull();
      expect(loadConfig({ ROLE: 'all', METRICS_PORT: '9100' }).metricsPort).toBe(9100);
    });

    it('should read METRICS_PORT and METRICS_HOST when they are valid', () => {
      expect(loadConfig({ METRICS_PORT: '9100', METRICS_HOST: '0.0.0.0' })).toMatchObject({
        metricsPort: 9100,
        metricsHost: '0.0.0.0',
      });
    });

    it('should refuse a METRICS_PORT that is not a port or equals PORT under ROLE=all', () => {
      const bad = (env: Record<string, string>): string[] => {
        try {
          loadConfig(env);
          return [];
        } catch (e) {
          return (e as ConfigError).problems;
        }
      };
      expect(bad({ METRICS_PORT: '70000' })).toEqual([
        'METRICS_PORT=70000: must be a whole number from 0 to 65535',
      ]);
      expect(bad({ METRICS_PORT: '1234' })).toEqual([
        'METRICS_PORT=1234: the ops port must differ from PORT with ROLE=all',
      ]);
      expect(bad({ METRICS_PORT: '1234', ROLE: 'manager' })).toEqual([]);
    });
  });

  describe('TRUST_PROXY', () => {
    it('should read addresses, ranges and named ranges of the proxies in front', () => {
      const config = loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,fd00::1' });
      expect(config.trustProxy).toEqual(['loopback', '10.0.0.0/8', 'fd00::1']);
      expect(loadConfig({}).trustProxy).toEqual([]);
    });

    it.each(['true', '*', '10.0.0.0/33', 'proxy.example.org'])(
      'should refuse TRUST_PROXY=%s, which names no proxy exactly',
      (value) => {
        expect(problemsOf({ TRUST_PROXY: value })).toEqual([
          `TRUST_PROXY=${value}: ${value} is not an address, a CIDR range or one of ` +
            'loopback, linklocal, uniquelocal',
        ]);
      },
    );
  });
  describe('NOTIFY_*', () => {
    it('should leave notifications off with the Blazar-like defaults when NOTIFY_URL is unset', () => {
      expect(loadConfig({}).notify).toEqual({
        url: null,
        exchange: 'openstack',
        topics: ['notifications'],
        publisherId: 'climate.lease',
        retentionHours: 72,
        durable: false,
      });
    });

    it('should read the broker, exchange, topics and publisher id when they are set', () => {
      const config = loadConfig({
        NOTIFY_URL: 'amqp://guest:guest@mq:5672/',
        NOTIFY_EXCHANGE: 'climate',
        NOTIFY_TOPICS: 'notifications, audit',
        NOTIFY_PUBLISHER_ID: 'climate.lease.m1',
        NOTIFY_RETENTION_HOURS: '24',
        NOTIFY_DURABLE: 'true',
      });
      expect(config.notify).toEqual({
        url: 'amqp://guest:guest@mq:5672/',
        exchange: 'climate',
        topics: ['notifications', 'audit'],
        publisherId: 'climate.lease.m1',
        retentionHours: 24,
        durable: true,
      });
      // Nova's exchange follows unless told otherwise.
      expect(config.novaNotify.durable).toBe(true);
      expect(problemsOf({ NOTIFY_DURABLE: 'yes' })).toEqual([
        'NOTIFY_DURABLE=yes: must be one of true, false',
      ]);
    });

    it('should refuse a NOTIFY_URL that is not amqp and an empty NOTIFY_TOPICS', () => {
      expect(problemsOf({ NOTIFY_URL: 'http://mq:5672', NOTIFY_TOPICS: ' , ' })).toEqual([
        'NOTIFY_URL: must be an amqp:// or amqps:// URL',
        'NOTIFY_TOPICS: name at least one topic (default notifications)',
      ]);
    });
  });
  describe('NOVA_NOTIFY_*', () => {
    it("should listen for nothing by default, and on Nova's exchange and topic when a broker is set", () => {
      expect(loadConfig({}).novaNotify).toEqual({
        url: null,
        exchange: 'nova',
        topics: ['versioned_notifications'],
        queue: 'climate-nova-notifications',
        durable: false,
      });
      expect(
        loadConfig({
          NOVA_NOTIFY_URL: 'rabbit://nova:pw@mq:5672/',
          NOVA_NOTIFY_TOPICS: 'versioned_notifications, notifications',
          NOVA_NOTIFY_QUEUE: 'climate-site-a',
        }).novaNotify,
      ).toEqual({
        url: 'rabbit://nova:pw@mq:5672/',
        exchange: 'nova',
        topics: ['versioned_notifications', 'notifications'],
        queue: 'climate-site-a',
        durable: false,
      });
    });

    it('should refuse a NOVA_NOTIFY_URL that is not amqp and an empty NOVA_NOTIFY_TOPICS', () => {
      expect(problemsOf({ NOVA_NOTIFY_URL: 'http://mq', NOVA_NOTIFY_TOPICS: ',' })).toEqual([
        'NOVA_NOTIFY_URL: must be an amqp://, amqps:// or rabbit:// URL',
        'NOVA_NOTIFY_TOPICS: name at least one topic (default versioned_notifications)',
      ]);
    });
  });
  describe('WEBHOOK_*', () => {
    const secret = 'a-shared-secret-of-32-characters';

    it('should send no webhooks by default, and to every listed URL when a secret is set', () => {
      expect(loadConfig({}).webhooks).toEqual({ urls: [], secret: '', timeoutMs: 10_000 });
      expect(
        loadConfig({
          WEBHOOK_URLS: 'https://billing.example/hooks/climate, http://10.0.0.5:8080/in',
          WEBHOOK_SECRET: secret,
          WEBHOOK_TIMEOUT_SECONDS: '3',
        }).webhooks,
      ).toEqual({
        urls: ['https://billing.example/hooks/climate', 'http://10.0.0.5:8080/in'],
        secret,
        timeoutMs: 3000,
      });
    });

    it('should refuse URLs without a secret, with a message saying why one is needed', () => {
      expect(problemsOf({ WEBHOOK_URLS: 'https://billing.example/in' })).toEqual([
        'WEBHOOK_SECRET: required when WEBHOOK_URLS is set (receivers check the signature ' +
          'of each delivery with it)',
      ]);
      expect(
        problemsOf({ WEBHOOK_URLS: 'https://billing.example/in', WEBHOOK_SECRET: 'short' }),
      ).toEqual(['WEBHOOK_SECRET: must be at least 16 characters long']);
    });

    it('should name each bad URL and a bad timeout when they are wrong', () => {
      expect(
        problemsOf({
          WEBHOOK_URLS:
            'ftp://files.example/x,not a url,https://u:pw@hooks.example/t,http://a/x,http://a/x',
          WEBHOOK_SECRET: secret,
          WEBHOOK_TIMEOUT_SECONDS: '0',
        }),
      ).toEqual([
        'WEBHOOK_TIMEOUT_SECONDS=0: must be a whole number from 1 to 300',
        'WEBHOOK_URLS: ftp://files.example/x is not an http:// or https:// URL',
        'WEBHOOK_URLS: not a url is not an http:// or https:// URL',
        'WEBHOOK_URLS: https://hooks.example carries a user or password; receivers check the ' +
          'X-Climate-Signature header instead',
        'WEBHOOK_URLS: http://a/x is listed twice',
      ]);
    });

    it('should accept a secret without URLs, sending nothing', () => {
      expect(loadConfig({ WEBHOOK_SECRET: 'x' }).webhooks.urls).toEqual([]);
    });
  });

  describe('POWER_* and PROVISIONING_LEAD_MINUTES', () => {
    it("should keep every host on and prepare at the start by default (today's behaviour)", () => {
      const config = loadConfig({});
      expect(config.power).toEqual({
        plan: false,
        offIdleMinutes: 60,
        maxTransitionsPerMinute: 10,
        bootSeconds: 600,
        intervalMs: 15_000,
      });
      expect(config.provisioningLeadMinutes).toBe(0);
      expect(config.builtinBootSeconds).toBe(60);
    });

    it('should read the power plan settings when they are valid', () => {
      const config = loadConfig({
        POWER_PLAN: 'on',
        POWER_OFF_IDLE_MINUTES: '90',
        POWER_MAX_TRANSITIONS_PER_MINUTE: '3',
        POWER_BOOT_SECONDS: '900',
        POWER_INTERVAL_MS: '30000',
        PROVISIONING_LEAD_MINUTES: '20',
        BUILTIN_BOOT_SECONDS: '0',
      });
      expect(config.power).toEqual({
        plan: true,
        offIdleMinutes: 90,
        maxTransitionsPerMinute: 3,
        bootSeconds: 900,
        intervalMs: 30_000,
      });
      expect([config.provisioningLeadMinutes, config.builtinBootSeconds]).toEqual([20, 0]);
    });

    it('should name every bad power setting in one error', () => {
      expect(
        problemsOf({
          POWER_PLAN: 'yes',
          POWER_MAX_TRANSITIONS_PER_MINUTE: '0',
          POWER_BOOT_SECONDS: '-1',
          PROVISIONING_LEAD_MINUTES: '1.5',
        }).map((p) => p.split('=')[0]),
      ).toEqual([
        'PROVISIONING_LEAD_MINUTES',
        'POWER_PLAN',
        'POWER_MAX_TRANSITIONS_PER_MINUTE',
        'POWER_BOOT_SECONDS',
      ]);
    });
  });

  describe("Blazar operators' settings", () => {
    it("should default to Blazar's freepool, blazar_ prefix, ordered picks and internal endpoints", () => {
      const config = loadConfig({});
      expect(config).toMatchObject({
        freepoolName: 'freepool',
        azPrefix: 'blazar_',
        randomizeHostSelection: false,
      });
      expect(config.keystone).toMatchObject({ interface: 'internal', region: null });
    });

    it('should read them when they are valid', () => {
      const config = loadConfig({
        FREEPOOL_NAME: 'free hosts',
        AZ_PREFIX: 'site:',
        RANDOMIZE_HOST_SELECTION: 'true',
        KEYSTONE_INTERFACE: 'public',
        KEYSTONE_REGION: 'RegionTwo',
      });
      expect(config).toMatchObject({
        freepoolName: 'free hosts',
        azPrefix: 'site:',
        randomizeHostSelection: true,
      });
      expect(config.keystone).toMatchObject({ interface: 'public', region: 'RegionTwo' });
    });

    it('should name every bad one in one error', () => {
      const names = (env: Record<string, string>) => problemsOf(env).map((p) => p.split('=')[0]);
      expect(
        names({
          FREEPOOL_NAME: 'shared',
          AZ_PREFIX: 'blazar zone',
          RANDOMIZE_HOST_SELECTION: 'yes',
          KEYSTONE_INTERFACE: 'internalURL',
        }).sort(),
      ).toEqual(['AZ_PREFIX', 'FREEPOOL_NAME', 'KEYSTONE_INTERFACE', 'RANDOMIZE_HOST_SELECTION']);
      for (const bad of [
        'recycle',
        ' padded',
        'x'.repeat(256),
        '0b2c7c35-0c5e-4f0e-9d3e-4c9a1e2f3b4d',
      ]) {
        expect(names({ FREEPOOL_NAME: bad })).toEqual(['FREEPOOL_NAME']);
      }
      expect(names({ AZ_PREFIX: 'y'.repeat(65) })).toEqual(['AZ_PREFIX']);
    });
  });
});
