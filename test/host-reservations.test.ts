import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, names } from './support/hosts.js';

const HOUR = 3600_000;
const env = { PLUGINS: 'physical:host,test:recorder', CLEANING_TIME_MINUTES: '30' };

describe('physical:host reservations', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  function lease(name: string, start: string, end: string, reservation: Record<string, unknown>) {
    return t.http
      .post('/v1/leases')
      .send({ name, start_date: start, end_date: end, reservations: [reservation] });
  }

  async function hostsOf(reservationId: string): Promise<string[]> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query(
        `SELECT h.hypervisor_hostname AS name FROM host_allocations a JOIN hosts h ON h.id = a.host_id
          WHERE a.reservation_id = $1 ORDER BY 1`,
        [reservationId],
      );
      return rows.map((r) => r.name as string);
    } finally {
      await client.end();
    }
  }

  async function poolOf(host: string): Promise<string> {
    const res = await t.http.get('/v1/pools').expect(200);
    const pool = (res.body.pools as { name: string; hosts: string[] }[]).find((p) =>
      p.hosts.includes(host),
    );
    return pool?.name ?? 'none';
  }

  it('should allocate up to max matching hosts and refuse with the earliest start when none are left', async () => {
    t.clock.set(new Date('2031-01-01T00:00:00Z'));
    await addHosts(t.http, ['big-1', 'big-2', 'small-1'], (n) => ({
      vcpus: n.startsWith('big') ? 32 : 4,
      gpu: n === 'big-2' ? 'True' : 'False',
    }));
    const first = await lease(
      'a',
      '2031-01-02 00:00',
      '2031-01-03 00:00',
      hostReservation({
        min: 1,
        max: 5,
        hypervisor_properties: '[">=", "$vcpus", "16"]',
      }),
    ).expect(201);
    const reservation = first.body.lease.reservations[0];
    expect(reservation).toMatchObject({
      resource_type: 'physical:host',
      min: 1,
      max: 5,
      status: 'pending',
    });
    expect(await hostsOf(reservation.id)).toEqual(['big-1', 'big-2']);

    const refused = await lease(
      'b',
      '2031-01-02 12:00',
      '2031-01-02 13:00',
      hostReservation({
        hypervisor_properties: '[">=", "$vcpus", "16"]',
      }),
    ).expect(409);
    expect(refused.body.error_type).toBe('NotEnoughHostsAvailable');
    // free again once lease a ends at 2031-01-03 00:00 plus the 30 minutes of cleaning
    expect(refused.body.error_message).toBe(
      'Not enough hosts available; the earliest start with 1 free matching host(s) is 2031-01-03 00:30',
    );
  });

  it('should compare capability numbers as numbers and reject unknown properties with 400', async () => {
    t.clock.set(new Date('2031-02-01T00:00:00Z'));
    await addHosts(t.http, ['cores-9', 'cores-10'], (n) => ({ cores: n.split('-')[1] }));
    const res = await lease(
      'num',
      '2031-02-02 00:00',
      '2031-02-03 00:00',
      hostReservation({
        min: 1,
        max: 2,
        resource_properties: '[">", "$cores", "9"]',
      }),
    ).expect(201);
    expect(await hostsOf(res.body.lease.reservations[0].id)).toEqual(['cores-10']);

    const unknown = await lease(
      'u',
      '2031-02-02 00:00',
      '2031-02-03 00:00',
      hostReservation({
        resource_properties: '["==", "$nonexistent", "1"]',
      }),
    ).expect(400);
    expect(unknown.body.error_message).toContain('nonexistent');
    const malformed = await lease(
      'm',
      '2031-02-02 00:00',
      '2031-02-03 00:00',
      hostReservation({
        resource_properties: '["~~", "$cores", "1"]',
      }),
    ).expect(400);
    expect(malformed.body.error_type).toBe('MalformedRequirements');
  });

  it('should let back-to-back leases share a host only with the cleaning time between them', async () => {
    t.clock.set(new Date('2031-03-01T00:00:00Z'));
    await addHosts(t.http, ['solo'], () => ({ zone: 'solo' }));
    const only = hostReservation({ resource_properties: '["==", "$zone", "solo"]' });
    await lease('one', '2031-03-02 10:00', '2031-03-02 11:00', only).expect(201);
    await lease('too-soon', '2031-03-02 11:00', '2031-03-02 12:00', only).expect(409);
    await lease('too-soon-2', '2031-03-02 11:29', '2031-03-02 12:00', only).expect(409);
    await lease('after-cleaning', '2031-03-02 11:30', '2031-03-02 12:30', only).expect(201);
    // and before: ends 30 minutes before lease one starts
    await lease('before', '2031-03-02 08:00', '2031-03-02 09:30', only).expect(201);
    await lease('before-overlap', '2031-03-02 08:00', '2031-03-02 09:31', only).expect(409);
  });

  it('should move hosts into the reservation pool at start and back to the freepool at end', async () => {
    t.clock.set(new Date('2031-04-01T00:00:00Z'));
    await addHosts(t.http, ['life-1'], () => ({ zone: 'life' }));
    const created = await lease(
      'life',
      '2031-04-01 01:00',
      '2031-04-01 03:00',
      hostReservation({
        resource_properties: '["==", "$zone", "life"]',
      }),
    ).expect(201);
    const reservationId = created.body.lease.reservations[0].id;
    expect(await poolOf('life-1')).toBe('freepool');

    t.clock.advance(HOUR);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${created.body.lease.id}`)).body.lease.status).toBe(
      'ACTIVE',
    );
    expect(await poolOf('life-1')).toBe(reservationId);
    const pools = (await t.http.get('/v1/pools')).body.pools as {
      name: string;
      availability_zone: string;
      metadata: Record<string, string>;
    }[];
    const pool = pools.find((p) => p.name === reservationId);
    expect(pool?.availability_zone).toBe(`blazar_${reservationId}`);
    expect(pool?.metadata['blazar:owner']).toBe('admin');

    t.clock.advance(2 * HOUR);
    await t.settle();
    const ended = (await t.http.get(`/v1/leases/${created.body.lease.id}`)).body.lease;
    expect(ended.status).toBe('TERMINATED');
    expect(await poolOf('life-1')).toBe('freepool');
    expect(
      (await t.http.get('/v1/pools')).body.pools.map((p: { name: string }) => p.name),
    ).not.toContain(reservationId);
    expect(await hostsOf(reservationId)).toEqual([]);
  });

  it('should leave the lease unchanged when an update cannot fit', async () => {
    t.clock.set(new Date('2031-05-01T00:00:00Z'));
    await addHosts(t.http, ['fit-1', 'fit-2'], () => ({ zone: 'fit' }));
    const fit = { resource_properties: '["==", "$zone", "fit"]' };
    const a = await lease(
      'fit-a',
      '2031-05-02 00:00',
      '2031-05-03 00:00',
      hostReservation(fit),
    ).expect(201);
    await lease(
      'fit-b',
      '2031-05-04 00:00',
      '2031-05-05 00:00',
      hostReservation({ ...fit, min: 2, max: 2 }),
    ).expect(201);
    const id = a.body.lease.id;
    const reservationId = a.body.lease.reservations[0].id;
    const before = await hostsOf(reservationId);

    // growing to two hosts fits; extending into lease b's window with two hosts does not
    await t.http
      .put(`/v1/leases/${id}`)
      .send({ reservations: [{ id: reservationId, min: 2, max: 2 }] })
      .expect(200);
    expect(await hostsOf(reservationId)).toEqual(['fit-1', 'fit-2']);
    const refused = await t.http
      .put(`/v1/leases/${id}`)
      .send({ end_date: '2031-05-04 12:00' })
      .expect(409);
    expect(refused.body.error_type).toBe('NotEnoughHostsAvailable');
    const after = (await t.http.get(`/v1/leases/${id}`)).body.lease;
    expect(after.end_date).toBe('2031-05-03T00:00:00.000000');
    expect(after.status).toBe('PENDING');
    expect(after.reservations[0]).toMatchObject({ min: 2, max: 2 });
    expect(await hostsOf(reservationId)).toEqual(['fit-1', 'fit-2']);
    expect(before).toHaveLength(1);
  });

  it('should spread hosts over racks with anti_affinity and keep them in one rack with affinity', async () => {
    t.clock.set(new Date('2031-06-01T00:00:00Z'));
    await addHosts(t.http, names('rk', 6), (_, i) => ({ zone: 'racked', rack: `r${i % 3}` }));
    const racked = { resource_properties: '["==", "$zone", "racked"]' };
    const spread = await lease(
      'spread',
      '2031-06-02 00:00',
      '2031-06-03 00:00',
      hostReservation({
        ...racked,
        min: 3,
        max: 3,
        anti_affinity: 'rack',
      }),
    ).expect(201);
    const client = await connect(db.url);
    const racks = async (reservationId: string) =>
      (
        await client.query(
          `SELECT h.capabilities ->> 'rack' AS rack FROM host_allocations a JOIN hosts h ON h.id = a.host_id
          WHERE a.reservation_id = $1 ORDER BY 1`,
          [reservationId],
        )
      ).rows.map((r) => r.rack as string);
    expect(await racks(spread.body.lease.reservations[0].id)).toEqual(['r0', 'r1', 'r2']);
    await lease(
      'spread-4',
      '2031-06-04 00:00',
      '2031-06-05 00:00',
      hostReservation({
        ...racked,
        min: 4,
        max: 4,
        anti_affinity: 'rack',
      }),
    ).expect(409);
    const together = await lease(
      'together',
      '2031-06-04 00:00',
      '2031-06-05 00:00',
      hostReservation({
        ...racked,
        min: 2,
        max: 2,
        affinity: 'rack',
      }),
    ).expect(201);
    const same = await racks(together.body.lease.reservations[0].id);
    await client.end();
    expect(same).toHaveLength(2);
    expect(new Set(same).size).toBe(1);
    await lease(
      'bad-level',
      '2031-06-04 00:00',
      '2031-06-05 00:00',
      hostReservation({ affinity: 'planet' }),
    ).expect(400);
  });

  it('should keep affinity and anti_affinity when healing moves hosts, and flag what cannot keep them', async () => {
    t.clock.set(new Date('2031-07-01T00:00:00Z'));
    // rack ta: 3 hosts, rack tb: 2 hosts
    await addHosts(t.http, ['ta-1', 'ta-2', 'ta-3', 'tb-1', 'tb-2'], (name) => ({
      zone: 'healrack',
      rack: name.slice(0, 2),
    }));
    const ids = Object.fromEntries(
      (
        (await t.http.get('/v1/os-hosts')).body.hosts as {
          id: string;
          hypervisor_hostname: string;
        }[]
      ).map((h) => [h.hypervisor_hostname, h.id]),
    );
    const down = (name: string) =>
      t.http.put(`/v1/os-hosts/${ids[name]}`).send({ reservable: false }).expect(200);
    const rackOf = (host: string) => host.slice(0, 2);
    const together = await lease(
      'heal-together',
      '2031-07-02 00:00',
      '2031-07-03 00:00',
      hostReservation({
        resource_properties: '["==", "$zone", "healrack"]',
        min: 2,
        max: 2,
        affinity: 'rack',
      }),
    ).expect(201);
    const rid = together.body.lease.reservations[0].id;
    const before = await hostsOf(rid);
    expect(before.map(rackOf)).toEqual(['ta', 'ta']);
    // one fails: its replacement comes from the same rack
    await down(before[0]);
    const healed = await hostsOf(rid);
    expect(healed.map(rackOf)).toEqual(['ta', 'ta']);
    expect(healed).not.toContain(before[0]);
    // another fails: no host of that rack is left, so it stays, flagged, never split
    await down(healed.find((h) => h !== before[1]) as string);
    expect((await hostsOf(rid)).map(rackOf)).toEqual(['ta', 'ta']);
    const shown = (await t.http.get(`/v1/leases/${together.body.lease.id}`)).body.lease;
    expect(shown.degraded).toBe(true);
    expect(shown.reservations[0].missing_resources).toBe(true);
  });

  it('should reject bad host reservation parameters with Blazar messages and write nothing', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ min: 1, max: undefined }, 'Missing parameter max'],
      [{ min: 'bar', max: 'foo' }, 'Malformed parameter min'],
      [{ min: 0, max: 1 }, 'Malformed parameter min and max (must be greater than or equal to 1)'],
      [
        { min: 3, max: 2 },
        'Invalid values for min/max of hosts. Max must be equal to or larger than min.',
      ],
      [{ before_end: 'explode' }, 'Invalid before_end'],
      [{ on_end: 'burn' }, 'Invalid on_end'],
    ];
    const client = await connect(db.url);
    const count = async () =>
      Number((await client.query('SELECT count(*) FROM leases')).rows[0].count);
    const before = await count();
    for (const [values, message] of cases) {
      const res = await lease('bad', 'now', '2040-01-01 00:00', hostReservation(values)).expect(
        400,
      );
      expect(res.body.error_message).toContain(message);
    }
    expect(await count()).toBe(before);
    await client.end();
  });

  it('should hand a host added to an active reservation to its pool at the next manager poll', async () => {
    t.clock.set(new Date('2031-07-01T00:00:00Z'));
    await addHosts(t.http, ['grow-1', 'grow-2'], () => ({ zone: 'grow' }));
    const created = await lease(
      'grow',
      'now',
      '2031-07-02 00:00',
      hostReservation({
        resource_properties: '["==", "$zone", "grow"]',
      }),
    ).expect(201);
    await t.settle();
    const reservationId = created.body.lease.reservations[0].id;
    expect(await poolOf('grow-1')).toBe(reservationId);
    expect(await poolOf('grow-2')).toBe('freepool');
    await t.http
      .put(`/v1/leases/${created.body.lease.id}`)
      .send({ reservations: [{ id: reservationId, max: 2 }] })
      .expect(200);
    expect(await hostsOf(reservationId)).toEqual(['grow-1', 'grow-2']);
    // the manager hands it over at its next poll, not the API process
    expect(await poolOf('grow-2')).toBe('freepool');
    await t.settle();
    expect(await poolOf('grow-2')).toBe(reservationId);
    const client = await connect(db.url);
    const { rows } = await client.query(`SELECT resync_at FROM reservations WHERE id = $1`, [
      reservationId,
    ]);
    await client.end();
    expect(rows[0].resync_at).toBeNull();
    // shrinking an active reservation below the hosts it uses is refused
    const shrink = await t.http
      .put(`/v1/leases/${created.body.lease.id}`)
      .send({ reservations: [{ id: reservationId, min: 1, max: 1 }] })
      .expect(409);
    expect(shrink.body.error_message).toContain('cannot give up hosts');
    expect(await hostsOf(reservationId)).toEqual(['grow-1', 'grow-2']);
  });
});
