import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, names } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';
import { KeystoneClient } from '../src/compute/keystone.client.js';
import { NovaDriver } from '../src/compute/nova.driver.js';

const HOUR = 3_600_000;
const tenant = { 'X-Project-Id': 'tenant', 'X-Roles': 'member' };

/** A tiny HTTP service: each request is recorded and answered by `answer`. */
class FakeService {
  readonly requests: { method: string; path: string; body: unknown }[] = [];
  private server: Server | null = null;
  constructor(private readonly answer: (method: string, path: string, body: unknown) => unknown) {}

  async listen(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of req) text += String(chunk);
    const body: unknown = text === '' ? null : JSON.parse(text);
    const path = req.url ?? '';
    this.requests.push({ method: req.method ?? '', path, body });
    const answer = this.answer(req.method ?? '', path, body);
    res.setHeader('Content-Type', 'application/json');
    if (path.startsWith('/auth/tokens')) res.setHeader('X-Subject-Token', 'service-token');
    res.statusCode = req.method === 'POST' && path === '/auth/tokens' ? 201 : 200;
    res.end(JSON.stringify(answer ?? {}));
  }

  close(): Promise<void> {
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

describe("Blazar operators' settings", () => {
  describe('KEYSTONE_INTERFACE and KEYSTONE_REGION', () => {
    const endpoint = (iface: string, region: string) => ({
      interface: iface,
      region_id: region,
      region,
      url: `http://${iface}.${region}.example:8774/v2.1/`,
    });
    const keystone = new FakeService(() => ({
      token: {
        expires_at: new Date(Date.now() + HOUR).toISOString(),
        user: { id: 'climate' },
        project: { id: 'service' },
        catalog: [
          {
            type: 'compute',
            endpoints: [
              endpoint('public', 'RegionOne'),
              endpoint('internal', 'RegionOne'),
              endpoint('public', 'RegionTwo'),
              endpoint('internal', 'RegionTwo'),
              endpoint('admin', 'RegionTwo'),
            ],
          },
        ],
      },
    }));
    let url: string;
    beforeAll(async () => {
      url = await keystone.listen();
    });
    afterAll(() => keystone.close());

    const client = (options: object) =>
      new KeystoneClient({
        url,
        username: 'climate',
        password: 'pw',
        project: 'service',
        domain: 'Default',
        ...options,
      });

    it("should call the catalog's internal endpoint by default, as Blazar does", async () => {
      expect(await client({}).endpoint('compute')).toMatch(/^http:\/\/internal\./);
    });

    it('should call the configured interface in the configured region', async () => {
      expect(await client({ interface: 'public', region: 'RegionTwo' }).endpoint('compute')).toBe(
        'http://public.RegionTwo.example:8774/v2.1',
      );
      expect(await client({ interface: 'admin', region: 'RegionTwo' }).endpoint('compute')).toBe(
        'http://admin.RegionTwo.example:8774/v2.1',
      );
    });

    it('should fail with a 502 naming what is missing, never another endpoint', async () => {
      await expect(
        client({ interface: 'admin', region: 'RegionOne' }).endpoint('compute'),
      ).rejects.toMatchObject({
        status: 502,
        message: expect.stringContaining('No admin compute endpoint in region RegionOne'),
      });
      await expect(client({}).endpoint('placement')).rejects.toMatchObject({ status: 502 });
    });
  });

  describe('FREEPOOL_NAME', () => {
    it("should put Climate's freepool hosts into Nova's aggregate of that name", async () => {
      const aggregates = [
        { id: 7, name: 'free-hosts', hosts: [] as string[], metadata: {} },
        { id: 8, name: 'freepool', hosts: [] as string[], metadata: {} },
      ];
      const nova = new FakeService((method, path, body) => {
        const action = /^\/os-aggregates\/(\d+)\/action$/.exec(path);
        if (action !== null) {
          const agg = aggregates.find((a) => a.id === Number(action[1]));
          const b = body as { add_host?: { host: string }; remove_host?: { host: string } };
          if (b.add_host) agg?.hosts.push(b.add_host.host);
          if (b.remove_host) agg?.hosts.splice(agg.hosts.indexOf(b.remove_host.host), 1);
        }
        if (path.startsWith('/os-hypervisors')) {
          return {
            hypervisors: [
              {
                id: '1',
                hypervisor_hostname: 'cn-1',
                state: 'up',
                status: 'enabled',
                service: { host: 'cn-1' },
              },
            ],
          };
        }
        if (method === 'GET' && path === '/os-aggregates') return { aggregates };
        return {};
      });
      const novaUrl = await nova.listen();
      try {
        const keystone = { serviceToken: async () => 'token' } as unknown as KeystoneClient;
        const driver = new NovaDriver(keystone, novaUrl, null, 1000, 'free-hosts');
        await driver.addHost('freepool', 'cn-1');
        await driver.removeHost('freepool', 'cn-1');
        const actions = nova.requests
          .filter((r) => r.method === 'POST')
          .map((r) => [r.path, r.body]);
        expect(actions).toEqual([
          ['/os-aggregates/7/action', { add_host: { host: 'cn-1' } }],
          ['/os-aggregates/7/action', { remove_host: { host: 'cn-1' } }],
        ]);
      } finally {
        await nova.close();
      }
    });
  });

  describe('AZ_PREFIX and RANDOMIZE_HOST_SELECTION', () => {
    let db: TestDatabase;
    afterEach(async () => {
      await db?.drop();
    });

    async function picks(env: Record<string, string>, driver?: MemoryDriver): Promise<TestApp> {
      db = await createTestDatabase();
      return startApp({ databaseUrl: db.url, driver, env: { PLUGINS: 'physical:host', ...env } });
    }

    /** The host each of `count` one-host leases gets, in windows that do not overlap. */
    async function chosen(t: TestApp, count: number): Promise<string[]> {
      const hosts: string[] = [];
      for (let i = 0; i < count; i++) {
        const start = new Date(t.clock.now().getTime() + (2 * i + 1) * HOUR);
        const res = await t.http
          .post('/v1/leases')
          .set(tenant)
          .send({
            name: `pick-${i}`,
            start_date: start.toISOString(),
            end_date: new Date(start.getTime() + HOUR).toISOString(),
            reservations: [hostReservation()],
          })
          .expect(201);
        const allocation = await t.http
          .get(`/v1/os-hosts/allocations?reservation_id=${res.body.lease.reservations[0].id}`)
          .expect(200);
        const held = (
          allocation.body.allocations as { resource_id: string; reservations: unknown[] }[]
        ).filter((a) => a.reservations.length > 0);
        hosts.push(...held.map((a) => a.resource_id));
      }
      return hosts;
    }

    it('should pick the first free host in id order by default, and at random when asked', async () => {
      const ordered = await picks({});
      try {
        const ids = await addHosts(ordered.http, names('o', 12));
        expect(new Set(await chosen(ordered, 8))).toEqual(new Set([ids[0]]));
      } finally {
        await ordered.close();
        await db.drop();
      }
      const random = await picks({ RANDOMIZE_HOST_SELECTION: 'true' });
      try {
        await addHosts(random.http, names('r', 12));
        // Eight picks among twelve equal hosts all on one host: 1 in 12^7.
        expect(new Set(await chosen(random, 8)).size).toBeGreaterThan(1);
      } finally {
        await random.close();
      }
    });

    it("should name a host reservation's zone with AZ_PREFIX", async () => {
      const driver = new MemoryDriver();
      const t = await picks({ AZ_PREFIX: 'site:' }, driver);
      try {
        await addHosts(t.http, ['z-1']);
        const res = await t.http
          .post('/v1/leases')
          .set(tenant)
          .send({
            name: 'zoned',
            start_date: 'now',
            end_date: new Date(t.clock.now().getTime() + HOUR).toISOString(),
            reservations: [hostReservation()],
          })
          .expect(201);
        await t.settle();
        const id = res.body.lease.reservations[0].id as string;
        expect(driver.pools.get(id)?.spec?.availabilityZone).toBe(`site:${id}`);
        const pools = (await t.http.get('/v1/pools').expect(200)).body.pools as {
          name: string;
          availability_zone: string | null;
        }[];
        expect(pools.find((p) => p.name === id)?.availability_zone).toBe(`site:${id}`);
      } finally {
        await t.close();
      }
    });
  });
});
