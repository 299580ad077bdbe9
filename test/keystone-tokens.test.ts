import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KeystoneStrategy } from '../src/compute/keystone.strategy.js';
import { KeystoneClient } from '../src/compute/keystone.client.js';

/** What a fake Keystone says a token is. */
type Kind = 'project' | 'unscoped' | 'domain' | 'appcred-nova' | 'appcred-reservation';

/** A fake Keystone v3 over real HTTP: counts validations; revoked tokens answer 404. */
class FakeKeystone {
  readonly tokens = new Map<string, Kind>();
  readonly revoked = new Set<string>();
  validations = 0;
  private server: Server | null = null;
  url = '';

  async listen(): Promise<void> {
    this.server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v3`;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    req.resume();
    const expires_at = new Date(Date.now() + 3_600_000).toISOString();
    if (req.method === 'POST') {
      res.writeHead(201, { 'Content-Type': 'application/json', 'X-Subject-Token': 'svc' });
      res.end(JSON.stringify({ token: { expires_at, user: { id: 'climate' } } }));
      return;
    }
    this.validations++;
    const subject = String(req.headers['x-subject-token']);
    const kind = this.tokens.get(subject);
    if (kind === undefined || this.revoked.has(subject)) {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"error": {"code": 404, "message": "Could not find token"}}');
      return;
    }
    const token: Record<string, unknown> = {
      expires_at,
      user: { id: `user-${subject}` },
      roles: [{ name: 'member' }, { name: 'reader' }],
    };
    if (kind !== 'unscoped' && kind !== 'domain') token.project = { id: 'p1' };
    if (kind === 'domain') token.domain = { id: 'default' };
    if (kind.startsWith('appcred-')) {
      const service = kind.slice('appcred-'.length);
      token.application_credential = {
        id: 'ac',
        access_rules: [{ service, method: 'GET', path: '/**' }],
      };
    }
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ token }));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Keystone token validations', () => {
  let keystone: FakeKeystone;
  let client: KeystoneClient;

  beforeAll(async () => {
    keystone = new FakeKeystone();
    await keystone.listen();
    client = new KeystoneClient({
      url: keystone.url,
      username: 'climate',
      password: 'pw',
      project: 'service',
      domain: 'Default',
      timeoutMs: 10_000,
    });
  });
  afterAll(() => keystone.close());

  const auth = (strategy: KeystoneStrategy, token: string) =>
    strategy.authenticate({ 'x-auth-token': token });

  it('should stop taking a revoked token once TOKEN_CACHE_SECONDS have passed', async () => {
    const strategy = new KeystoneStrategy(client, { cacheSeconds: 1, cacheEntries: 100 });
    keystone.tokens.set('revocable', 'project');
    await expect(auth(strategy, 'revocable')).resolves.toMatchObject({ projectId: 'p1' });
    keystone.revoked.add('revocable');
    // Within the bound the cached validation stands, as keystonemiddleware's does.
    const before = keystone.validations;
    await expect(auth(strategy, 'revocable')).resolves.toMatchObject({ projectId: 'p1' });
    expect(keystone.validations).toBe(before);
    await sleep(1_200);
    await expect(auth(strategy, 'revocable')).rejects.toMatchObject({ status: 401 });
  });

  it('should validate every time with TOKEN_CACHE_SECONDS=0', async () => {
    const strategy = new KeystoneStrategy(client, { cacheSeconds: 0, cacheEntries: 100 });
    keystone.tokens.set('uncached', 'project');
    const before = keystone.validations;
    await auth(strategy, 'uncached');
    await auth(strategy, 'uncached');
    expect(keystone.validations - before).toBe(2);
    expect(strategy.cached).toBe(0);
  });

  it('should keep at most TOKEN_CACHE_ENTRIES validations, dropping the least recently used', async () => {
    const strategy = new KeystoneStrategy(client, { cacheSeconds: 300, cacheEntries: 2 });
    for (const t of ['t1', 't2', 't3']) keystone.tokens.set(t, 'project');
    await auth(strategy, 't1');
    await auth(strategy, 't2');
    await auth(strategy, 't1'); // t1 used last: t2 is the one to go
    await auth(strategy, 't3');
    expect(strategy.cached).toBe(2);
    const before = keystone.validations;
    await auth(strategy, 't1');
    await auth(strategy, 't3');
    expect(keystone.validations).toBe(before);
    await auth(strategy, 't2');
    expect(keystone.validations).toBe(before + 1);
    expect(strategy.cached).toBe(2);
  });

  it.each<[Kind, number | 'ok']>([
    ['unscoped', 401],
    ['domain', 401],
    ['appcred-nova', 401],
    ['appcred-reservation', 'ok'],
    ['project', 'ok'],
  ])('should answer a token scoped %s with %s', async (kind, status) => {
    const strategy = new KeystoneStrategy(client, { cacheSeconds: 300, cacheEntries: 100 });
    keystone.tokens.set(`kind-${kind}`, kind);
    const result = auth(strategy, `kind-${kind}`);
    if (status === 'ok') await expect(result).resolves.toMatchObject({ projectId: 'p1' });
    else await expect(result).rejects.toMatchObject({ status });
  });
});
