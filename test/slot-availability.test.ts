import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, type TestDatabase } from './support/database.js';
import { startApp, type TestApp } from './support/app.js';
import { slotReservation } from './support/hosts.js';
import { MAX_CANDIDATES } from '../src/plugins/virtual-instance/slot-availability.js';

const TOKENS = {
  admin: { user_id: 'u-admin', project_id: 'p-admin', roles: ['admin'] },
  alice: { user_id: 'u-alice', project_id: 'p-a', roles: ['member', 'reader'] },
  bob: { user_id: 'u-bob', project_id: 'p-b', roles: ['member', 'reader'] },
};
const as = (token: keyof typeof TOKENS) => ({ 'X-Auth-Token': token });
/** 4-vCPU slots on the two 8-vCPU hosts of zone "avail": four slots at ratio 1. */
const SIZE = { vcpus: 4, memory_mb: 4096, disk_gb: 10 };
const ZONE = '["==", "$zone", "avail"]';

interface Window {
  start_date: string;
  end_date: string;
}

describe('GET /v1/instances/availability', () => {
  let db: TestDatabase;
  let t: TestApp;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'climate-slot-availability-'));
    writeFileSync(join(dir, 'tokens.json'), JSON.stringify(TOKENS));
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: {
        AUTH_STRATEGY: 'tokens',
        AUTH_TOKENS_FILE: join(dir, 'tokens.json'),
        PLUGINS: 'physical:host,virtual:instance',
        CPU_ALLOCATION_RATIO: '1',
        CLEANING_TIME_MINUTES: '30',
      },
    });
    t.clock.set(new Date('2041-03-01T00:00:00Z'));
    for (const name of ['avail-1', 'avail-2']) {
      await t.http
        .post('/v1/os-hosts')
        .set(as('admin'))
        .send({ name, vcpus: 8, memory_mb: 16384, local_gb: 100, zone: 'avail' })
        .expect(201);
    }
    // Bob's project holds three slots 01:00-05:00 and one 06:00-08:00 (plus cleaning).
    await lease('bob', 'bob-three', '2041-03-01 01:00', '2041-03-01 05:00', 3).expect(201);
    await lease('bob', 'bob-one', '2041-03-01 06:00', '2041-03-01 08:00', 1).expect(201);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  function lease(
    who: keyof typeof TOKENS,
    name: string,
    start: string,
    end: string,
    amount: number,
    extra = {},
  ) {
    return t.http
      .post('/v1/leases')
      .set(as(who))
      .send({
        name,
        start_date: start,
        end_date: end,
        reservations: [slotReservation('avail', { amount, ...extra })],
      });
  }

  async function windows(query: Record<string, unknown>, who: keyof typeof TOKENS = 'alice') {
    const res = await t.http
      .get('/v1/instances/availability')
      .set(as(who))
      .query({ ...SIZE, resource_properties: ZONE, ...query })
      .expect(200);
    return (res.body as { availability: Window[] }).availability;
  }
  const starts = (ws: Window[]) => ws.map((w) => w.start_date.slice(0, 16));

  it('should offer the earliest starts where the slots fit, and the create takes the first', async () => {
    // One slot is free beside bob's three from now on.
    expect(starts(await windows({ amount: 1, duration: '2h', limit: 1 }))).toEqual([
      '2041-03-01T00:00',
    ]);
    // Two slots for 2h: not before bob's three end (05:00 + 30 min cleaning), then when
    // bob's last one ends; the candidates are the allocations' ends.
    const two = await windows({ amount: 2, duration: '2h', limit: 3 });
    expect(starts(two)).toEqual(['2041-03-01T05:30', '2041-03-01T08:30']);
    expect(two[0].end_date.slice(0, 16)).toBe('2041-03-01T07:30');
    // What the API does not offer, the create refuses: 00:00 is one slot short.
    await lease('alice', 'alice-early', '2041-03-01 00:00', '2041-03-01 02:00', 2).expect(409);
    // Both on one host: the host bob's last slot is not on; all four wait for that slot.
    expect(
      starts(await windows({ amount: 2, affinity: 'true', duration: '1h', limit: 1 })),
    ).toEqual(['2041-03-01T05:30']);
    expect(starts(await windows({ amount: 4, duration: '1h', limit: 1 }))).toEqual([
      '2041-03-01T08:30',
    ]);
    await lease('alice', 'alice-four-early', '2041-03-01 05:30', '2041-03-01 06:30', 4).expect(409);

    const booked = await lease('alice', 'alice-two', '2041-03-01 05:30', '2041-03-01 07:30', 2);
    expect(booked.status).toBe(201);
    // Taken: two more wait for alice's end plus cleaning (08:00), beside bob's last one.
    expect(starts(await windows({ amount: 2, duration: '2h', limit: 1 }))).toEqual([
      '2041-03-01T08:00',
    ]);
    await lease('alice', 'alice-again', '2041-03-01 08:00', '2041-03-01 10:00', 2).expect(201);
  });

  it('should look past its bound of candidate starts to the last allocation end', async () => {
    // One full host of its own zone, taken an hour in every two (the other is its
    // cleaning and a gap too short for the 30-minute window plus cleaning): more ends
    // than the candidates it looks at (MAX_CANDIDATES) before the host is free again.
    await t.http
      .post('/v1/os-hosts')
      .set(as('admin'))
      .send({ name: 'busy-1', vcpus: 8, memory_mb: 16384, local_gb: 100, zone: 'busy' })
      .expect(201);
    const first = Date.parse('2041-04-01T00:00:00Z');
    const hours = MAX_CANDIDATES + 20;
    const at = (h: number) => new Date(first + h * 3_600_000).toISOString().slice(0, 16);
    for (let h = 0; h < hours; h++) {
      await t.http
        .post('/v1/leases')
        .set(as('bob'))
        .send({
          name: `busy-${h}`,
          start_date: at(2 * h).replace('T', ' '),
          end_date: at(2 * h + 1).replace('T', ' '),
          reservations: [slotReservation('busy', { vcpus: 8 })],
        })
        .expect(201);
    }
    const started = performance.now();
    const ws = await windows({
      amount: 1,
      vcpus: 8,
      duration: '30m',
      start: at(0).replace('T', ' '),
      resource_properties: '["==", "$zone", "busy"]',
      limit: 2,
    });
    const ms = performance.now() - started;
    // Free once the last lease has ended and been cleaned.
    expect(starts(ws)).toEqual([at(2 * hours - 1 + 0.5)]);
    console.log(`${MAX_CANDIDATES} candidate starts looked at in ${Math.round(ms)} ms`);
    // Ends on other hosts are no candidates: zone "avail" is free all along, from the start.
    expect(
      starts(
        await windows({ amount: 1, duration: '30m', start: at(0).replace('T', ' '), limit: 2 }),
      ),
    ).toEqual([at(0)]);
  }, 120_000);

  it('should start from the start asked for', async () => {
    expect(
      starts(await windows({ amount: 1, duration: '30m', start: '2041-03-02 10:15', limit: 1 })),
    ).toEqual(['2041-03-02T10:15']);
  });

  it('should give a tenant windows only, nothing of other projects', async () => {
    const res = await t.http
      .get('/v1/instances/availability')
      .set(as('alice'))
      .query({ ...SIZE, amount: 1, duration: '1h', resource_properties: ZONE })
      .expect(200);
    const text = JSON.stringify(res.body);
    for (const secret of ['bob', 'p-b', 'avail-1', 'avail-2']) expect(text).not.toContain(secret);
    for (const w of res.body.availability as Window[]) {
      expect(Object.keys(w).sort()).toEqual(['end_date', 'start_date']);
    }
  });

  it("should refuse bad input with Blazar's error body and change nothing", async () => {
    const before = (await t.http.get('/v1/leases').set(as('admin')).expect(200)).body.leases.length;
    const bad: [Record<string, unknown>, string][] = [
      [{ amount: 1 }, 'duration must be'],
      [{ amount: 1, duration: 'soon' }, 'duration'],
      [{ duration: '1h' }, 'Missing parameter amount'],
      [{ amount: 0, duration: '1h' }, 'Malformed parameter amount'],
      [{ amount: 1, duration: '1h', vcpus: 'many' }, 'Malformed parameter vcpus'],
      [{ amount: 1, duration: '1h', affinity: 'maybe' }, 'Malformed parameter affinity'],
      [{ amount: 1, duration: '1h', limit: 0 }, 'limit'],
      [{ amount: 1, duration: '1h', start: 'tomorrow' }, 'tomorrow'],
      [{ amount: 1, duration: '1h', resource_properties: '["==", "$zone"' }, ''],
      [{ amount: 1, duration: '1h', colour: 'red' }, 'Unknown parameter colour'],
    ];
    for (const [query, message] of bad) {
      const res = await t.http
        .get('/v1/instances/availability')
        .set(as('alice'))
        .query({ ...SIZE, ...query });
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(res.body).toMatchObject({ error_code: 400, error_name: 400 });
      expect(res.body.error_message).toContain(message);
    }
    const after = (await t.http.get('/v1/leases').set(as('admin')).expect(200)).body.leases.length;
    expect(after).toBe(before);
  });
});
