import { resolve } from 'node:path';
import { describeDatabase } from './lifecycle.js';

describe('describeDatabase', () => {
  it('should give host, port and database name and never the user or password of a URL', () => {
    const described = describeDatabase({
      databaseUrl: 'postgres://climate:s3cr%40t@db.example.org:6432/climate_prod?sslmode=require',
      dataDir: './data',
    });
    expect(described).toEqual({ host: 'db.example.org', port: 6432, database: 'climate_prod' });
    expect(JSON.stringify(described)).not.toMatch(/s3cr|climate:|sslmode/);
  });

  it('should default the port and read a socket host from the query when the URL has none', () => {
    expect(
      describeDatabase({ databaseUrl: 'postgresql:///climate?host=/run/postgresql', dataDir: '' }),
    ).toEqual({ host: '/run/postgresql', port: 5432, database: 'climate' });
  });

  it('should give the data directory as an absolute path when the database is embedded', () => {
    expect(describeDatabase({ databaseUrl: null, dataDir: './data' })).toEqual({
      embedded: true,
      data_dir: resolve('./data'),
    });
  });
});
