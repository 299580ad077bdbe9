import { randomUUID } from 'node:crypto';
import { connect as amqpConnect, type Channel, type ChannelModel } from 'amqplib';
import type { Client } from 'pg';
import { NovaListener } from '../src/events/nova-listener.js';
import { startApp, TestApp } from './support/app.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { addHosts, hostReservation } from './support/hosts.js';
import { BROKER } from './support/rabbit.js';
import { sleep, waitFor } from './support/seed.js';
import { TcpProxy } from './support/tcp-proxy.js';

jest.setTimeout(60_000);

/** A compute service's service.update as Nova publishes it (oslo.messaging 2.0, versioned). */
function serviceUpdate(host: string, data: Record<string, unknown>): Buffer {
  const notification = {
    message_id: randomUUID(),
    publisher_id: `nova-api:controller`,
    event_type: 'service.update',
    priority: 'INFO',
    timestamp: new Date().toISOString().replace('T', ' ').replace('Z', ''),
    payload: {
      'nova_object.name': 'ServiceStatusPayload',
      'nova_object.namespace': 'nova',
      'nova_object.version': '1.1',
      'nova_object.data': {
        host,
        binary: 'nova-compute',
        topic: 'compute',
        disabled: false,
        disabled_reason: null,
        forced_down: false,
        last_seen_up: null,
        ...data,
      },
    },
  };
  return Buffer.from(
    JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify(notification) }),
  );
}

describe("host failures learnt from Nova's service.update notifications", () => {
  const exchange = `nova-test-${randomUUID()}`;
  const queue = `climate-test-${randomUUID()}`;
  const proxy = new TcpProxy('127.0.0.1', 5672);
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  let nova: ChannelModel;
  let channel: Channel;
  let leaseId: string;

  const env = () => ({
    PLUGINS: 'physical:host',
    NOVA_NOTIFY_URL: `rabbit://guest:guest@127.0.0.1:${proxy.port}`,
    NOVA_NOTIFY_EXCHANGE: exchange,
    NOVA_NOTIFY_QUEUE: queue,
  });
  /** What Nova does: publish on its exchange with routing key versioned_notifications.info. */
  const publish = (body: Buffer | string) =>
    channel.publish(exchange, 'versioned_notifications.info', Buffer.from(body));

  const allocatedHost = async (): Promise<string> => {
    const { rows } = await client.query(
      `SELECT h.hypervisor_hostname AS name FROM host_allocations a JOIN hosts h ON h.id = a.host_id
        JOIN reservations r ON r.id = a.reservation_id WHERE r.lease_id = $1`,
      [leaseId],
    );
    return (rows as { name: string }[])[0].name;
  };
  const reservable = async (name: string): Promise<boolean> => {
    const { rows } = await client.query(`SELECT reservable FROM hosts WHERE service_name = $1`, [
      name,
    ]);
    return (rows as { reservable: boolean }[])[0].reservable;
  };
  const hostId = async (name: string): Promise<string> => {
    const { rows } = await client.query(`SELECT id FROM hosts WHERE service_name = $1`, [name]);
    return String((rows as { id: number }[])[0].id);
  };
  const eventCount = async (app: TestApp, result: string): Promise<number> => {
    const text = (await app.http.get('/metrics').expect(200)).text;
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`climate_nova_service_events_total{result="${result}"}`));
    return line === undefined ? 0 : Number(line.split(' ')[1]);
  };

  beforeAll(async () => {
    await proxy.listen();
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: env() });
    client = await connect(db.url);
    await t.app.get(NovaListener).ready();
    nova = await amqpConnect(BROKER);
    channel = await nova.createChannel();
    await addHosts(t.http, ['c1', 'c2', 'c3']);
    const lease = await t.http
      .post('/v1/leases')
      .send({
        name: 'running',
        start_date: 'now',
        end_date: '2030-01-02T00:00:00Z',
        reservations: [hostReservation()],
      })
      .expect(201);
    leaseId = lease.body.lease.id;
    await t.settle();
  });
  afterAll(async () => {
    await nova?.close();
    await client?.end();
    await t?.close();
    await proxy.cut();
    await db?.drop();
    const cleanup = await amqpConnect(BROKER);
    const ch = await cleanup.createChannel();
    await ch.deleteQueue(queue);
    await ch.deleteExchange(exchange);
    await cleanup.close();
  });

  it('should take a forced-down compute host out and move its running reservation at once, with no poll', async () => {
    const failed = await allocatedHost();
    const started = Date.now();
    publish(serviceUpdate(failed, { forced_down: true }));
    // The manager timer is off in tests: only the notification can do this.
    const movedTo = await waitFor('the reservation moved', async () => {
      const now = await allocatedHost();
      return now !== failed ? now : undefined;
    });
    const seconds = (Date.now() - started) / 1000;
    expect(seconds).toBeLessThan(5);
    expect(await reservable(failed)).toBe(false);
    expect(await reservable(movedTo)).toBe(true);
    const lease = (await t.http.get(`/v1/leases/${leaseId}`).expect(200)).body.lease;
    expect(lease.reservations[0].resources_changed).toBe(true);
    expect(lease.degraded).toBe(false);
    expect(await eventCount(t, 'down')).toBe(1);

    // Back up: reservable again (the reservation stays where it moved).
    publish(serviceUpdate(failed, {}));
    await waitFor('the host back', async () =>
      (await eventCount(t, 'up')) === 1 ? true : undefined,
    );
    expect(await reservable(failed)).toBe(true);
    expect(await allocatedHost()).toBe(movedTo);
  });

  it('should count a disabled service as down, but not one Climate disabled for its power plan', async () => {
    const running = await allocatedHost();
    const spare = ['c1', 'c2', 'c3'].find((n) => n !== running) as string;
    publish(
      serviceUpdate(spare, {
        disabled: true,
        disabled_reason: 'climate: powered off by power plan',
      }),
    );
    publish(serviceUpdate(spare, { disabled: true, disabled_reason: 'bad disk' }));
    await waitFor('the host out', async () => ((await reservable(spare)) ? undefined : true));
    expect(await eventCount(t, 'ignored')).toBeGreaterThanOrEqual(1);
    publish(serviceUpdate(spare, { disabled: false }));
    await waitFor('the host back', async () => ((await reservable(spare)) ? true : undefined));
  });

  it("should not put back a host that an admin took out, and skip what is not a compute host's news", async () => {
    await t.http
      .put(`/v1/os-hosts/${await hostId('c3')}`)
      .send({ reservable: false })
      .expect(200);
    const ignoredBefore = await eventCount(t, 'ignored');
    publish('not json at all');
    publish(serviceUpdate('c3', { binary: 'nova-scheduler', forced_down: true }));
    publish(serviceUpdate('c3', {}));
    await waitFor('three handled', async () =>
      (await eventCount(t, 'ignored')) === ignoredBefore + 2 &&
      (await eventCount(t, 'unchanged')) >= 1
        ? true
        : undefined,
    );
    expect(await reservable('c3')).toBe(false);
  });

  it("should keep what Nova sent while Climate's broker connection was down, and apply it on reconnect", async () => {
    const host = await allocatedHost();
    await proxy.cut();
    publish(serviceUpdate(host, { forced_down: true }));
    await sleep(500);
    expect(await reservable(host)).toBe(true);
    await proxy.listen();
    await waitFor(
      'the reservation moved after the reconnect',
      async () => ((await allocatedHost()) !== host ? true : undefined),
      15_000,
    );
    expect(await reservable(host)).toBe(false);
    publish(serviceUpdate(host, {}));
    await waitFor('the host back', async () => ((await reservable(host)) ? true : undefined));
  });

  it('should hand each notification to one replica only when several share the queue', async () => {
    const other = await startApp({ databaseUrl: db.url, env: env() });
    try {
      await other.app.get(NovaListener).ready();
      const before = (await eventCount(t, 'unchanged')) + (await eventCount(other, 'unchanged'));
      for (let i = 0; i < 20; i++) publish(serviceUpdate(`unknown-${i}`, {}));
      await waitFor('all 20 handled', async () => {
        const sum = (await eventCount(t, 'unchanged')) + (await eventCount(other, 'unchanged'));
        return sum >= before + 20 ? sum : undefined;
      });
      await sleep(300);
      const sum = (await eventCount(t, 'unchanged')) + (await eventCount(other, 'unchanged'));
      expect(sum).toBe(before + 20);
    } finally {
      await other.close();
    }
  });
});
