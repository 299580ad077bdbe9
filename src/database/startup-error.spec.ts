import { ConfigError, loadConfig } from '../config/config.js';
import { DataDirLocked } from './data-dir-lock.js';
import { databaseTarget, explainStartupError } from './startup-error.js';

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

describe('explainStartupError', () => {
  const pg = loadConfig({ DATABASE_URL: 'postgres://climate:s3cret@db.example:6543/leases' });
  const embedded = loadConfig({ DATA_DIR: '/var/lib/climate' });

  it('should give a configuration error as its own message, listing every setting', () => {
    const error = new ConfigError(['PORT=x: bad', 'PLUGINS=y: bad']);
    expect(explainStartupError(error, null)).toBe(error.message);
  });

  it('should give a locked DATA_DIR as its own message', () => {
    const error = new DataDirLocked('/d', 42);
    expect(explainStartupError(error, embedded)).toBe(error.message);
  });

  it.each([
    ['ECONNREFUSED', 'nothing listens there'],
    ['ENOTFOUND', 'the host name does not resolve'],
    ['28P01', 'the password was refused'],
    ['3D000', 'the database does not exist'],
  ])('should name DATABASE_URL without its password when the database answers %s', (code, why) => {
    const text = explainStartupError(withCode('connect failed s3cret', code), pg);
    expect(text).toBe(`DATABASE_URL: cannot open PostgreSQL at db.example:6543/leases: ${why}.`);
  });

  it('should name the setting and no stack when node-postgres times out connecting', () => {
    const text = explainStartupError(new Error('timeout exceeded when trying to connect'), pg);
    expect(text).toBe(
      'DATABASE_URL: cannot open PostgreSQL at db.example:6543/leases: ' +
        'timeout exceeded when trying to connect.',
    );
  });

  it('should name PORT when the address is in use', () => {
    const error = withCode(
      'listen EADDRINUSE: address already in use 127.0.0.1:1234',
      'EADDRINUSE',
    );
    expect(explainStartupError(error, embedded)).toBe(
      'PORT=1234 (HOST=127.0.0.1): the address is in use by another process; pick another PORT.',
    );
  });

  it('should keep the stack of an error nobody foresaw', () => {
    const error = new Error('boom');
    expect(explainStartupError(error, pg)).toContain('    at ');
  });

  it('should describe the database without the user or password', () => {
    expect(databaseTarget(pg)).toBe('PostgreSQL at db.example:6543/leases');
    expect(databaseTarget(embedded)).toBe('the embedded database in /var/lib/climate');
  });
});
