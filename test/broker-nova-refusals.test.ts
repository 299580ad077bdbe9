import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { connect as amqpConnect } from 'amqplib';
import type { Client } from 'pg';
import { NovaListener } from '../src/events/nova-listener.js';
import { startApp, type TestApp } from './support/app.js';
import { connect, createTestDatabase, type TestDatabase } from './support/database.js';
import { addHosts } from './support/hosts.js';
import { rabbitmqctl, TestVhost } from './support/rabbit-admin.js';
import { createLease, waitFor } from './support/seed.js';

jest.setTimeout(120_000);

/** A compute service forced down, as Nova's versioned service.update says it. */
function forcedDown(host: string): Buffer {
  const notification = {
    message_id: randomUUID(),
    publisher_id: 'nova-api:controller',
    event_type: 'service.update',
    priority: 'INFO',
    payload: {
      'nova_object.name': 'ServiceStatusPayload',
      'nova_object.data': {
        host,
        binary: 'nova-compute',
        disabled: false,
        disabled_reason: null,
        forced_down: true,
      },
    },
  };
  return Buffer.from(
    JSON.stringify({ 'oslo.version': '2.0', 'oslo.message': JSON.stringify(notification) }),
  );
}

/**
 * The Nova listener meets the refusals of a shared broker on Nova's exchange (issue 23):
 * an exchange declared by Nova with other arguments, a connection the broker closes. It
 * keeps listening, the process keeps serving leases, and each is logged and counted.
 */
describe("the Nova listener on a broker shared with Nova's own declarations", () => {
  const vhost = new TestVhost();
  const exchange = `nova-${randomUUID()}`;
  const queue = `climate-nova-${randomUUID()}`;
  let db: TestDatabase;
  let client: Client;
  let t: TestApp;

  beforeAll(async () => {
    await vhost.create();
    db = await createTestDatabase();
    client = await connect(db.url);
  });
  afterAll(async () => {
    await t?.close();
    await client?.end();
    await db?.drop();
    await vhost.drop();
  });

  async function metric(line: string): Promise<number> {
    const text = (await t.http.get('/metrics').expect(200)).text;
    const found = text.split('\n').find((l) => l.startsWith(line));
    return found === undefined ? 0 : Number(found.split(' ').pop());
  }
  const problems = (reason: string) =>
    metric(`climate_broker_problems_total{link="nova",reason="${reason}"}`);

  async function reservable(name: string): Promise<boolean> {
    const { rows } = await client.query<{ reservable: boolean }>(
      `SELECT reservable FROM hosts WHERE service_name = $1`,
      [name],
    );
    return rows[0].reservable;
  }

  /** What Nova does: publish on its exchange, routing key versioned_notifications.info. */
  async function novaSends(body: Buffer): Promise<void> {
    const nova = await amqpConnect(vhost.url());
    try {
      const channel = await nova.createConfirmChannel();
      channel.publish(exchange, 'versioned_notifications.info', body);
      await channel.waitForConfirms();
    } finally {
      await nova.close();
    }
  }

  const lease = (name: string) =>
    createLease(t, { name, start: '2030-06-01 00:00', end: '2030-06-01 01:00' });

  it('should use a Nova exchange declared otherwise as it is, and reconnect when the broker closes it', async () => {
    // Nova declared its exchange durable; Climate would declare it not durable (oslo's default).
    const setup = await amqpConnect(vhost.url());
    await (await setup.createChannel()).assertExchange(exchange, 'topic', { durable: true });
    await setup.close();
    const warn = jest.spyOn(Logger.prototype, 'warn');
    try {
      t = await startApp({
        databaseUrl: db.url,
        env: {
          PLUGINS: 'physical:host,test:recorder',
          NOVA_NOTIFY_URL: vhost.url().replace(/^amqp:/, 'rabbit:'),
          NOVA_NOTIFY_EXCHANGE: exchange,
          NOVA_NOTIFY_QUEUE: queue,
        },
      });
      await addHosts(t.http, ['nr-1', 'nr-2']);
      // Listening despite the 406: a bounded wait, so a listener that never starts fails.
      let listening = false;
      void t.app
        .get(NovaListener)
        .ready()
        .then(() => (listening = true));
      await waitFor('the listener', () => (listening ? true : undefined), 30_000);
      expect(await metric('climate_broker_connected{link="nova"}')).toBe(1);
      await lease('while-refused');
      await novaSends(forcedDown('nr-1'));
      await waitFor(
        'nr-1 out',
        async () => ((await reservable('nr-1')) ? undefined : true),
        15_000,
      );

      // The broker closes Climate's connection (named so in its list).
      const list = await rabbitmqctl('list_connections', 'pid', 'vhost', 'client_properties');
      const pids = list
        .split('\n')
        .filter((l) => l.includes(vhost.name) && l.includes("climate: Nova's broker"))
        .map((l) => l.split('\t')[0]);
      expect(pids).toHaveLength(1);
      await rabbitmqctl('close_connection', pids[0], 'test closes it');
      await waitFor(
        'the loss counted',
        async () => ((await problems('connection_lost')) > 0 ? true : undefined),
        15_000,
      );
      await lease('while-reconnecting');
      await waitFor(
        'the listener back',
        async () =>
          (await metric('climate_broker_connected{link="nova"}')) === 1 ? true : undefined,
        30_000,
      );
      await novaSends(forcedDown('nr-2'));
      await waitFor(
        'nr-2 out',
        async () => ((await reservable('nr-2')) ? undefined : true),
        15_000,
      );
      await lease('after');

      // The exchange was met twice (start, reconnect): logged once, and not a failure.
      const asIs = warn.mock.calls
        .map((c) => c[0] as { msg?: string; object?: string })
        .filter((l) => l.msg === 'declared elsewhere with other arguments; used as it is');
      expect(asIs.map((l) => l.object)).toEqual([`exchange ${exchange}`]);
      expect(await problems('refused')).toBe(0);
      expect(await problems('connection_lost')).toBe(1);
      // used as it is: still Nova's durable exchange
      const exchanges = await rabbitmqctl('list_exchanges', '-p', vhost.name, 'name', 'durable');
      expect(exchanges).toMatch(new RegExp(`${exchange}\\s+true`));
    } finally {
      warn.mockRestore();
    }
  });
});
