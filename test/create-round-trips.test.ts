import { Client } from 'pg';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, slotReservation } from './support/hosts.js';
import { PhysicalHostPlugin } from '../src/plugins/physical-host/physical-host.plugin.js';
import { VirtualInstancePlugin } from '../src/plugins/virtual-instance/virtual-instance.plugin.js';
import type { ResourcePlugin } from '../src/plugins/resource-plugin.js';
import type { Frame } from '../src/database/framed-statement.js';

jest.setTimeout(60_000);

const env = {
  PLUGINS: 'physical:host,virtual:instance,test:recorder',
  // Notifications on (the outbox is written), nothing sent: the manager's timer is off.
  WEBHOOK_URLS: 'http://127.0.0.1:9/hook',
  WEBHOOK_SECRET: 'a-secret-of-sixteen-characters',
  PROJECT_MAX_HOSTS: '-1',
};

interface Sent {
  text: string;
  named: boolean;
  /** Sent with BEGIN before it or COMMIT after it, in the same round trip. */
  begin: boolean;
  commit: boolean;
}

/** Every statement (round trip) this process sends to PostgreSQL while `on` (in-process app). */
const sent: Sent[] = [];
let on = false;
const proto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
const original = proto.query;
proto.query = function (this: unknown, ...args: unknown[]) {
  if (on) {
    const q = args[0] as string | { text: string; name?: string; frame?: Frame };
    sent.push(
      typeof q === 'string'
        ? { text: q, named: false, begin: false, commit: false }
        : {
            text: q.text,
            named: q.name !== undefined,
            begin: q.frame?.begin ?? false,
            commit: q.frame?.commit ?? false,
          },
    );
  }
  return original.apply(this, args);
};

const BEGIN = /^(START TRANSACTION|BEGIN)\b/i;
const COMMIT = /^COMMIT\b/i;

/** The statements of a create's transaction, BEGIN and COMMIT apart (sent alone or framed). */
function inside(): { statements: Sent[]; transaction: boolean } {
  const begin = sent.findIndex((s) => s.begin || BEGIN.test(s.text));
  if (begin === -1) return { statements: [...sent], transaction: false };
  const commit = sent.findIndex((s) => s.commit || COMMIT.test(s.text));
  const statements = sent
    .slice(begin, commit + 1)
    .filter((s) => !BEGIN.test(s.text) && !COMMIT.test(s.text));
  return { statements, transaction: true };
}

describe('lease create round trips', () => {
  let db: TestDatabase;
  let t: TestApp;
  let day = 0;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env });
    await addHosts(t.http, ['h-1', 'h-2', 'h-3', 'h-4'], () => ({ zone: 'z' }));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** A day of its own for each lease, so that they never compete. */
  function body(reservations: Record<string, unknown>[]) {
    day++;
    const d = (n: number) =>
      `2030-0${1 + Math.floor(n / 28)}-${String(1 + (n % 28)).padStart(2, '0')}`;
    return {
      name: `l-${day}`,
      start_date: `${d(day)} 00:00`,
      end_date: `${d(day)} 12:00`,
      reservations,
    };
  }

  async function traced(send: () => Promise<unknown>): Promise<void> {
    sent.length = 0;
    on = true;
    try {
      await send();
    } finally {
      on = false;
    }
  }

  async function query<T>(text: string, params: unknown[] = [], replica = false): Promise<T[]> {
    const client = await connect(db.url);
    try {
      // Without the foreign keys' row locks: as if committed just before the create locked.
      if (replica) await client.query(`SET session_replication_role = replica`);
      return (await client.query(text, params)).rows as T[];
    } finally {
      await client.end();
    }
  }

  it('should write a lease without reservations in one statement, with no transaction', async () => {
    await traced(() => t.http.post('/v1/leases').send(body([])).expect(201));
    const { statements, transaction } = inside();
    expect(transaction).toBe(false);
    expect(statements).toHaveLength(1);
    expect(statements[0].named).toBe(true);
  });

  it('should create a host or instance lease in two prepared statements inside its transaction', async () => {
    for (const reservation of [
      hostReservation(),
      slotReservation('z', { resource_properties: '' }),
    ]) {
      let lease: { id: string; reservations: { id: string }[] } | undefined;
      await traced(async () => {
        lease = (
          await t.http
            .post('/v1/leases')
            .send(body([reservation]))
            .expect(201)
        ).body.lease;
      });
      const { statements, transaction } = inside();
      expect(transaction).toBe(true);
      expect(statements).toHaveLength(2);
      expect(statements.every((s) => s.named)).toBe(true);
      // Two round trips in all: BEGIN goes with the pick and COMMIT with the write.
      expect(sent).toHaveLength(2);
      expect(sent.map((s) => [s.begin, s.commit])).toEqual([
        [true, false],
        [false, true],
      ]);
      // The one statement wrote the lease, its reservation, events, allocation and outbox row.
      const [counts] = await query<Record<string, number>>(
        `SELECT (SELECT count(*) FROM reservations WHERE lease_id = $1)::int AS reservations,
                (SELECT count(*) FROM events WHERE lease_id = $1)::int AS events,
                (SELECT count(*) FROM host_allocations WHERE reservation_id = $2)::int
                  + (SELECT count(*) FROM instance_allocations WHERE reservation_id = $2)::int AS allocations,
                (SELECT count(*) FROM notification_outbox
                  WHERE event_type = 'lease.create' AND payload ->> 'id' = $1::text)::int AS notifications`,
        [lease!.id, lease!.reservations[0].id],
      );
      expect(counts).toEqual({ reservations: 1, events: 3, allocations: 1, notifications: 1 });
    }
  });

  it('should claim an Idempotency-Key in the same three statements, and replay it', async () => {
    const request = body([hostReservation()]);
    let first: { id: string } | undefined;
    await traced(async () => {
      first = (
        await t.http.post('/v1/leases').set('Idempotency-Key', 'rt-1').send(request).expect(201)
      ).body.lease;
    });
    expect(inside().statements).toHaveLength(3);
    // The replay lookup before the transaction, then the three with BEGIN on the first; the
    // COMMIT goes alone, so that the key is never committed without its lease.
    expect(sent).toHaveLength(5);
    expect(sent[1].begin).toBe(true);
    expect(sent.some((s) => s.commit)).toBe(false);
    const again = await t.http
      .post('/v1/leases')
      .set('Idempotency-Key', 'rt-1')
      .send(request)
      .expect(201);
    expect(again.body.lease).toEqual(first);
    const [stored] = await query<{ id: string }>(
      `SELECT response ->> 'id' AS id FROM idempotency_keys WHERE key = 'rt-1'`,
    );
    expect(stored.id).toBe(first!.id);
  });

  /** A reservation (of the recorder plugin, holding nothing) for rows written by hand. */
  async function holderReservation(): Promise<string> {
    const res = await t.http
      .post('/v1/leases')
      .send(body([{ resource_type: 'test:recorder' }]))
      .expect(201);
    return res.body.lease.reservations[0].id as string;
  }

  /** Runs `between` after the plugin chose (and locked), before the create writes. */
  function interpose(plugin: ResourcePlugin, between: (hosts: number[]) => Promise<void>) {
    const prepare = plugin.prepare!.bind(plugin);
    const spy = jest.spyOn(plugin, 'prepare').mockImplementationOnce(async (tx, r, w) => {
      const prepared = await prepare(tx, r, w);
      await between(await lockedHosts());
      return prepared;
    });
    return spy;
  }

  /** Host rows some transaction holds locked right now (the create's pick). */
  async function lockedHosts(): Promise<number[]> {
    const rows = await query<{ id: number }>(`SELECT id FROM hosts ORDER BY id`);
    const locked: number[] = [];
    const client = await connect(db.url);
    try {
      for (const { id } of rows) {
        await client.query('BEGIN');
        const r = await client.query(`SELECT id FROM hosts WHERE id = $1 FOR UPDATE SKIP LOCKED`, [
          id,
        ]);
        await client.query('ROLLBACK');
        if (r.rows.length === 0) locked.push(id);
      }
    } finally {
      await client.end();
    }
    return locked;
  }

  /** Commits one slot of `vcpus` on `host` for [start, end) to the reservation `holder`. */
  function takeSlot(holder: string, host: number, [start, end]: string[], vcpus: number) {
    return query(
      `INSERT INTO instance_allocations (id, reservation_id, host_id, slots, vcpus, memory_mb, disk_gb, during)
       VALUES (gen_random_uuid(), $1, $2, 1, $5, 1, 1, tstzrange($3, $4, '[)'))`,
      [holder, host, start, end, vcpus],
      true,
    );
  }

  /**
   * Creates `request` while `change` runs on the host the plugin chose, after its pick
   * and before the create's write; gives that host and the hosts the lease got instead.
   */
  async function createWhileChosenChanges(
    plugin: ResourcePlugin,
    request: ReturnType<typeof body>,
    table: 'host_allocations' | 'instance_allocations',
    change: (host: number) => Promise<unknown>,
  ): Promise<{ taken: number; hosts: number[] }> {
    let taken: number | undefined;
    interpose(plugin, async ([host]) => {
      taken = host;
      await change(host);
    });
    let lease: { reservations: { id: string }[] } | undefined;
    await traced(async () => {
      lease = (await t.http.post('/v1/leases').send(request).expect(201)).body.lease;
    });
    // The framed transaction committed nothing; the classic one picked around the change.
    expect(sent[0].begin).toBe(true);
    expect(sent.some((s) => /^START TRANSACTION/i.test(s.text))).toBe(true);
    const rows = await query<{ host_id: number }>(
      `SELECT host_id FROM ${table} WHERE reservation_id = $1`,
      [lease!.reservations[0].id],
    );
    expect(taken).toBeDefined();
    return { taken: taken!, hosts: rows.map((r) => r.host_id) };
  }

  it('should take another host when slots were committed on the chosen one before the write', async () => {
    const plugin = t.app.get(PhysicalHostPlugin);
    const request = body([hostReservation()]);
    const [start, end] = [`${request.start_date}+00`, `${request.end_date}+00`];
    const holder = await holderReservation();
    const { taken, hosts } = await createWhileChosenChanges(
      plugin,
      request,
      'host_allocations',
      // A slot reservation that committed after the pick's snapshot, before its lock.
      (host) => takeSlot(holder, host, [start, end], 1),
    );
    expect(hosts).toHaveLength(1);
    expect(hosts[0]).not.toBe(taken);
  });

  it('should answer the real lease for a key when the chosen host was taken before the write', async () => {
    const plugin = t.app.get(PhysicalHostPlugin);
    const request = body([hostReservation()]);
    const [start, end] = [`${request.start_date}+00`, `${request.end_date}+00`];
    const holder = await holderReservation();
    interpose(plugin, async ([host]) => {
      await takeSlot(holder, host, [start, end], 1);
    });
    const res = await t.http
      .post('/v1/leases')
      .set('Idempotency-Key', 'rt-stale')
      .send(request)
      .expect(201);
    expect(res.body.lease.id).toBeDefined();
    const [stored] = await query<{ id: string }>(
      `SELECT response ->> 'id' AS id FROM idempotency_keys WHERE key = 'rt-stale'`,
    );
    expect(stored.id).toBe(res.body.lease.id);
    const again = await t.http
      .post('/v1/leases')
      .set('Idempotency-Key', 'rt-stale')
      .send(request)
      .expect(201);
    expect(again.body.lease).toEqual(res.body.lease);
  });

  it('should move slots to another host when the chosen one filled up before the write', async () => {
    const plugin = t.app.get(VirtualInstancePlugin);
    const request = body([slotReservation('z', { resource_properties: '', vcpus: 8 })]);
    const [start, end] = [`${request.start_date}+00`, `${request.end_date}+00`];
    const holder = await holderReservation();
    const { taken, hosts } = await createWhileChosenChanges(
      plugin,
      request,
      'instance_allocations',
      // Fills the host's vCPUs (8 × the allocation ratio) for the window.
      (host) => takeSlot(holder, host, [start, end], Math.ceil(8 * t.config.cpuAllocationRatio)),
    );
    expect(hosts).not.toContain(taken);
    expect(hosts).toHaveLength(1);
  });
  it('should take another host when the chosen one was powered off before the write', async () => {
    const plugin = t.app.get(PhysicalHostPlugin);
    const request = body([hostReservation()]);
    // Two minutes before the start: a host that is off cannot boot (600 s) in time.
    const saved = t.clock.now();
    t.clock.set(new Date(new Date(`${request.start_date}Z`).getTime() - 120_000));
    let chosen: number | undefined;
    try {
      const { taken, hosts } = await createWhileChosenChanges(
        plugin,
        request,
        'host_allocations',
        async (host) => {
          chosen = host;
          await query(
            `INSERT INTO host_power (host_id, state, changed_at) VALUES ($1, 'off', now())
             ON CONFLICT (host_id) DO UPDATE SET state = 'off', deadline = NULL`,
            [host],
            true,
          );
        },
      );
      expect(hosts).toHaveLength(1);
      expect(hosts[0]).not.toBe(taken);
    } finally {
      await query(`UPDATE host_power SET state = 'on' WHERE host_id = $1`, [chosen]);
      t.clock.set(saved);
    }
  });
});
