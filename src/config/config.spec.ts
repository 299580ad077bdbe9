import { ConfigError, loadConfig } from './config.js';

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
      plugins: ['physical:host', 'virtual:instance'],
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
});
