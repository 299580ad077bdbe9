import { randomUUID } from 'node:crypto';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';
import { connect as amqpConnect } from 'amqplib';
import { Maintenance } from '../src/events/maintenance.service.js';
import { NovaListener } from '../src/events/nova-listener.js';
import { TestVhost } from './support/rabbit-admin.js';

const HOSTS = ['sh-1', 'sh-2'];
const env = {
  PLUGINS: 'physical:host,virtual:instance',
  CPU_ALLOCATION_RATIO: '1',
  // Only the shelve tick can act within the test: the upkeep and event polls are an hour.
  HEAL_INTERVAL_MS: '3600000',
  EVENT_POLL_MS: '3600000',
  SHELVE_POLL_MS: '200',
};
/** Generous: a loaded machine; the periodic upkeep would take an hour. */
const WITHIN_MS = 20_000;

/**
 * Nova as it shelves with `shelved_offload_time` > 0: a shelve leaves the server SHELVED
 * on its host, and only a further request offloads it. Counts the questions per server.
 */
class CountingDriver extends MemoryDriver {
  readonly asked = new Map<string, number>();

  override async getServer(id: string) {
    this.asked.set(id, (this.asked.get(id) ?? 0) + 1);
    return super.getServer(id);
  }

  override async shelveServer(id: string): Promise<void> {
    const server = this.shelved.get(id);
    if (server?.status === 'ACTIVE') server.status = 'SHELVED';
    else await super.shelveServer(id);
  }
}

async function until(what: string, done: () => boolean | Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await done())) {
    if (Date.now() - started > WITHIN_MS) throw new Error(`not within ${WITHIN_MS} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return Date.now() - started;
}

/** A server Nova is scheduling, and its lease for later made by the filter's call. */
async function boot(t: TestApp, driver: MemoryDriver, project: string): Promise<string> {
  const id = randomUUID();
  driver.shelved.set(id, {
    id,
    projectId: project,
    status: 'BUILD',
    vcpus: 2,
    memoryMb: 2048,
    diskGb: 5,
    host: null,
  });
  const res = await t.http.post('/v1/scheduler/filter').send({
    hosts: HOSTS,
    project_id: project,
    user_id: 'u1',
    instance_uuid: id,
    hints: {
      reserved: 'True',
      lease_params: JSON.stringify({
        name: `${project}-later`,
        start: '2043-01-01 00:02',
        end: '2043-01-01 01:00',
      }),
    },
    flavor_extra_specs: {},
  });
  expect(res.status).toBe(200);
  return id;
}

/** A reserved=True boot for a later lease is shelved at once, not at the next upkeep. */
describe('shelving servers booted for a later lease', () => {
  let db: TestDatabase;
  let t: TestApp;
  const driver = new CountingDriver();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env, driver, managerTimer: true });
    t.clock.set(new Date('2043-01-01T00:00:00Z'));
    await addHosts(t.http, HOSTS);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const bootForLater = (project: string) => boot(t, driver, project);

  const statusOf = (id: string) => driver.shelved.get(id)?.status;
  const asked = (id: string) => driver.asked.get(id) ?? 0;
  /** Waits for `n` more questions about a server still booting: `n` more ticks ran. */
  async function ticks(witness: string, n: number): Promise<void> {
    const from = asked(witness);
    await until(`${n} ticks`, () => asked(witness) >= from + n);
  }

  async function leaseCount(project: string): Promise<number> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query(`SELECT 1 FROM leases WHERE project_id = $1`, [project]);
      return rows.length;
    } finally {
      await client.end();
    }
  }

  it('should shelve and offload the server soon after it is ACTIVE, then stop asking about it', async () => {
    const server = await bootForLater('night');
    // a boot still under way: asked about at every tick, never shelved yet
    const witness = await bootForLater('slow');
    await ticks(witness, 2);
    expect(statusOf(server)).toBe('BUILD');
    Object.assign(driver.shelved.get(server) ?? {}, { status: 'ACTIVE', host: 'sh-1' });
    // the first shelve leaves it SHELVED: done only once seen offloaded
    const took = await until('offloaded', () => statusOf(server) === 'SHELVED_OFFLOADED');
    expect(took).toBeLessThan(WITHIN_MS);
    // a whole tick after the offload, the server is known shelved: no more questions
    await ticks(witness, 2);
    const before = asked(server);
    await ticks(witness, 5);
    expect(asked(server)).toBe(before);
    expect(statusOf(witness)).toBe('BUILD');
  });

  it('should shelve again a server unshelved by hand, found by the periodic upkeep', async () => {
    const server = await bootForLater('hand');
    Object.assign(driver.shelved.get(server) ?? {}, { status: 'ACTIVE', host: 'sh-2' });
    await until('offloaded', () => statusOf(server) === 'SHELVED_OFFLOADED');
    Object.assign(driver.shelved.get(server) ?? {}, { status: 'ACTIVE', host: 'sh-2' });
    await t.app.get(Maintenance).run();
    // the upkeep asked Nova again and asked for a shelve; the short tick finishes it
    await until('offloaded again', () => statusOf(server) === 'SHELVED_OFFLOADED');
  });

  it('should stop asking about a server deleted before its lease starts', async () => {
    const gone = await bootForLater('gone');
    const witness = await bootForLater('slow-2');
    driver.shelved.delete(gone);
    await ticks(witness, 2);
    const before = asked(gone);
    expect(before).toBeGreaterThanOrEqual(1);
    await ticks(witness, 5);
    expect(asked(gone)).toBe(before);
  });

  it('should delete the lease of a server Nova put in ERROR before its start', async () => {
    const server = await bootForLater('broken');
    expect(await leaseCount('broken')).toBe(1);
    Object.assign(driver.shelved.get(server) ?? {}, { status: 'ERROR' });
    await until('lease deleted', async () => (await leaseCount('broken')) === 0);
  });
});

/** Where Nova's notifications are on, its word that the server is ACTIVE is enough. */
describe("shelving on Nova's instance notifications", () => {
  const vhost = new TestVhost();
  const exchange = `nova-${randomUUID()}`;
  let db: TestDatabase;
  let t: TestApp;
  const driver = new MemoryDriver();

  beforeAll(async () => {
    await vhost.create();
    db = await createTestDatabase();
    // No manager timers at all: only the notification can shelve.
    t = await startApp({
      databaseUrl: db.url,
      driver,
      env: {
        ...env,
        NOVA_NOTIFY_URL: vhost.url(),
        NOVA_NOTIFY_EXCHANGE: exchange,
        NOVA_NOTIFY_QUEUE: `climate-nova-${randomUUID()}`,
      },
    });
    t.clock.set(new Date('2043-01-01T00:00:00Z'));
    await addHosts(t.http, HOSTS);
    await t.app.get(NovaListener).ready();
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    await vhost.drop();
  });

  async function novaSays(eventType: string, uuid: string, state: string): Promise<void> {
    const notification = {
      message_id: randomUUID(),
      publisher_id: 'nova-compute:sh-1',
      event_type: eventType,
      priority: 'INFO',
      payload: {
        'nova_object.name': 'InstanceActionPayload',
        'nova_object.data': { uuid, state, host: 'sh-1' },
      },
    };
    const nova = await amqpConnect(vhost.url());
    try {
      const channel = await nova.createConfirmChannel();
      const body = { 'oslo.version': '2.0', 'oslo.message': JSON.stringify(notification) };
      channel.publish(exchange, 'versioned_notifications.info', Buffer.from(JSON.stringify(body)));
      await channel.waitForConfirms();
    } finally {
      await nova.close();
    }
  }

  it('should shelve a server booted for later as soon as Nova says it is ACTIVE', async () => {
    const server = await boot(t, driver, 'told');
    const other = await boot(t, driver, 'other');
    Object.assign(driver.shelved.get(server) ?? {}, { status: 'ACTIVE', host: 'sh-1' });
    Object.assign(driver.shelved.get(other) ?? {}, { status: 'ACTIVE', host: 'sh-2' });
    // someone else's server, and news that is not ACTIVE: nothing done
    await novaSays('instance.create.end', randomUUID(), 'active');
    await novaSays('instance.update', other, 'building');
    await novaSays('instance.create.end', server, 'active');
    await until('offloaded', () => driver.shelved.get(server)?.status === 'SHELVED_OFFLOADED');
    // only the server Nova spoke of
    expect(driver.shelved.get(other)?.status).toBe('ACTIVE');
    await novaSays('instance.update', other, 'active');
    await until('other offloaded', () => driver.shelved.get(other)?.status === 'SHELVED_OFFLOADED');
  });
});
