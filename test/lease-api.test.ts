import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';

const as = (project: string, roles = 'member') => ({
  'X-Project-Id': project,
  'X-User-Id': `${project}-u`,
  'X-Roles': roles,
});
const A = as('proj-a');
const B = as('proj-b');

describe('/v1/leases', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url });
    t.clock.set(new Date('2037-01-01T00:00:00Z'));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function rows(): Promise<number[]> {
    const client = await connect(db.url);
    try {
      const counts = await Promise.all(
        ['leases', 'reservations', 'events'].map(async (table) =>
          Number((await client.query(`SELECT count(*) FROM ${table}`)).rows[0].count),
        ),
      );
      return counts;
    } finally {
      await client.end();
    }
  }

  const create = (body: Record<string, unknown>, headers = A) =>
    t.http
      .post('/v1/leases')
      .set(headers)
      .send({ name: 'l', start_date: '2037-02-01 10:00', end_date: '2037-02-02 10:00', ...body });

  it('should answer 201 with the Blazar lease object when a lease is created', async () => {
    const res = await create({
      name: 'shape',
      reservations: [{ resource_type: 'test:recorder', size: 3 }],
    }).expect(201);
    const lease = res.body.lease;
    expect(Object.keys(lease).sort()).toEqual(
      [
        'created_at',
        'degraded',
        'end_date',
        'events',
        'id',
        'name',
        'project_id',
        'reservations',
        'start_date',
        'status',
        'trust_id',
        'updated_at',
        'user_id',
      ].sort(),
    );
    expect(lease).toMatchObject({
      name: 'shape',
      start_date: '2037-02-01T10:00:00.000000',
      end_date: '2037-02-02T10:00:00.000000',
      status: 'PENDING',
      degraded: false,
      project_id: 'proj-a',
      user_id: 'proj-a-u',
      created_at: '2037-01-01 00:00:00',
      updated_at: null,
    });
    expect(lease.reservations[0]).toMatchObject({
      resource_type: 'test:recorder',
      status: 'pending',
      size: 3,
      lease_id: lease.id,
      missing_resources: false,
      resources_changed: false,
    });
    expect(
      lease.events.map((e: { event_type: string; time: string; status: string }) => [
        e.event_type,
        e.time,
        e.status,
      ]),
    ).toEqual([
      ['start_lease', '2037-02-01T10:00:00.000000', 'UNDONE'],
      ['before_end_lease', '2037-02-02T09:00:00.000000', 'UNDONE'],
      ['end_lease', '2037-02-02T10:00:00.000000', 'UNDONE'],
    ]);
    expect(res.headers.etag).toBe('"1"');
  });

  it.each([
    [
      { start_date: '2037-1-2 3:4', end_date: '2037-01-03 00:00' },
      '2037-01-02T03:04:00.000000',
      '2037-01-02T23:00:00.000000',
    ],
    [
      { start_date: 'now', end_date: '2037-01-01 00:30' },
      '2037-01-01T00:00:00.000000',
      '2037-01-01T00:00:00.000000',
    ],
    [
      {
        start_date: '2037-03-01T12:00:00+02:00',
        end_date: '2037-03-01T14:00:00Z',
        before_end_date: '2037-03-01 13:30',
      },
      '2037-03-01T10:00:00.000000',
      '2037-03-01T13:30:00.000000',
    ],
  ])('should accept the date forms in %j', async (dates, start, beforeEnd) => {
    const lease = (await create(dates).expect(201)).body.lease;
    expect(lease.start_date).toBe(start);
    expect(
      lease.events.find((e: { event_type: string }) => e.event_type === 'before_end_lease').time,
    ).toBe(beforeEnd);
  });

  it.each([
    [{ end_date: undefined }, 'Missing parameter end_date'],
    [{ name: undefined }, 'Missing parameter name'],
    [
      { start_date: 'Bogus-date 13:13' },
      'Bogus-date 13:13 is an invalid date. Required format: %Y-%m-%d %H:%M',
    ],
    [
      { start_date: '2050-11-13 13:13', end_date: '2050-11-13 12:13' },
      'End date must be later than start date.',
    ],
    [{ start_date: '2036-12-31 23:00' }, 'Start date must be later than current date'],
    [{ before_end_date: '2037-02-03 00:00' }, 'Datetime is out of lease limits'],
    [
      { reservations: [{ resource_type: 'foo:bar' }] },
      'The foo:bar resource type is not supported',
    ],
    [{ reservations: [{ size: 1 }] }, 'Missing parameter resource_type'],
    [
      {
        reservations: [
          { resource_type: 'test:recorder' },
          { resource_type: 'test:recorder', size: 0 },
        ],
      },
      'Malformed parameter size',
    ],
    [{ colour: 'red' }, 'Unknown parameter colour'],
    [{ events: [{ event_type: 'x', event_date: 'soon' }] }, 'soon is an invalid date'],
    [{ events: 'lots' }, 'events must be a list'],
    [{ reservations: 'lots' }, 'reservations must be a list'],
  ])('should refuse %j with 400 and write nothing', async (body, message) => {
    const before = await rows();
    const res = await create(body).expect(400);
    expect(res.body.error_code).toBe(400);
    expect(res.body.error_message).toContain(message);
    expect(res.body.error_name).toBe(400);
    expect(typeof res.body.error_type).toBe('string');
    expect(await rows()).toEqual(before);
    if (message.startsWith('Missing parameter'))
      expect(res.body.error_type).toBe('MissingParameter');
  });

  it('should refuse a malformed JSON body with 400', async () => {
    const res = await t.http
      .post('/v1/leases')
      .set('Content-Type', 'application/json')
      .send('{"name": ')
      .expect(400);
    expect(res.body.error_code).toBe(400);
  });

  it('should never show, change or delete a lease to another project, and answer 404', async () => {
    const id = (await create({ name: 'private' }).expect(201)).body.lease.id;
    const listB = await t.http.get('/v1/leases').set(B).expect(200);
    expect(listB.body.leases.map((l: { id: string }) => l.id)).not.toContain(id);
    for (const res of [
      await t.http.get(`/v1/leases/${id}`).set(B),
      await t.http.put(`/v1/leases/${id}`).set(B).send({ name: 'stolen' }),
      await t.http.delete(`/v1/leases/${id}`).set(B),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error_message).toBe(`Object with {'lease_id': '${id}'} not found`);
    }
    const still = await t.http.get(`/v1/leases/${id}`).set(A).expect(200);
    expect(still.body.lease.name).toBe('private');
    await t.http.get('/v1/leases/not-a-uuid').set(A).expect(404);
  });

  it('should show admins every project and filter by project_id', async () => {
    await create({ name: 'b-lease' }, B).expect(201);
    const all = await t.http.get('/v1/leases').set(as('ops', 'admin')).expect(200);
    const projects = new Set(all.body.leases.map((l: { project_id: string }) => l.project_id));
    expect(projects.has('proj-a') && projects.has('proj-b')).toBe(true);
    const onlyB = await t.http
      .get('/v1/leases?project_id=proj-b')
      .set(as('ops', 'admin'))
      .expect(200);
    expect(new Set(onlyB.body.leases.map((l: { project_id: string }) => l.project_id))).toEqual(
      new Set(['proj-b']),
    );
    // a non-admin asking for another project still sees only its own
    const sneaky = await t.http.get('/v1/leases?project_id=proj-b').set(A).expect(200);
    expect(sneaky.body.leases.every((l: { project_id: string }) => l.project_id === 'proj-a')).toBe(
      true,
    );
  });

  it('should page with limit and marker, filter by status and sort', async () => {
    const C = as('proj-c');
    for (const name of ['delta', 'alpha', 'charlie', 'bravo', 'echo'])
      await create({ name }, C).expect(201);
    const names = async (query: string) =>
      (await t.http.get(`/v1/leases${query}`).set(C).expect(200)).body.leases as {
        name: string;
        id: string;
      }[];
    const sorted = await names('?sort=name:asc');
    expect(sorted.map((l) => l.name)).toEqual(['alpha', 'bravo', 'charlie', 'delta', 'echo']);
    const page1 = await names('?sort=name&limit=2');
    const page2 = await names(`?sort=name&limit=2&marker=${page1[1].id}`);
    const page3 = await names(`?sort=name&limit=2&marker=${page2[1].id}`);
    expect([...page1, ...page2, ...page3].map((l) => l.name)).toEqual([
      'alpha',
      'bravo',
      'charlie',
      'delta',
      'echo',
    ]);
    expect((await names('?sort=name:desc&limit=1'))[0].name).toBe('echo');
    expect(await names('?status=ACTIVE')).toEqual([]);
    expect((await names('?status=PENDING')).length).toBe(5);
    for (const bad of [
      '?limit=0',
      '?limit=abc',
      '?sort=colour',
      '?sort=name:sideways',
      '?status=HAPPY',
      '?marker=zzz',
    ]) {
      await t.http.get(`/v1/leases${bad}`).set(C).expect(400);
    }
  });

  it('should rename and move a pending lease, with its events following', async () => {
    const lease = (await create({ name: 'mover' }).expect(201)).body.lease;
    const res = await t.http
      .put(`/v1/leases/${lease.id}`)
      .set(A)
      .send({ name: 'moved', start_date: '2037-02-05 10:00', end_date: '2037-02-06 12:00' })
      .expect(200);
    const moved = res.body.lease;
    expect(moved).toMatchObject({
      name: 'moved',
      start_date: '2037-02-05T10:00:00.000000',
      end_date: '2037-02-06T12:00:00.000000',
      status: 'PENDING',
    });
    const times = Object.fromEntries(
      moved.events.map((e: { event_type: string; time: string }) => [e.event_type, e.time]),
    );
    expect(times).toEqual({
      start_lease: '2037-02-05T10:00:00.000000',
      before_end_lease: '2037-02-06T11:00:00.000000',
      end_lease: '2037-02-06T12:00:00.000000',
    });
    expect(res.headers.etag).toBe('"2"');
    expect(moved.updated_at).toBe('2037-01-01 00:00:00');
  });

  it('should refuse impossible updates and keep the lease as it was, status included', async () => {
    const created = (
      await create({
        name: 'steady',
        start_date: '2037-01-01 01:00',
        end_date: '2037-01-01 05:00',
        reservations: [{ resource_type: 'test:recorder' }],
      }).expect(201)
    ).body.lease;
    t.clock.set(new Date('2037-01-01T02:00:00Z'));
    await t.settle();
    const active = (await t.http.get(`/v1/leases/${created.id}`).set(A)).body.lease;
    expect(active.status).toBe('ACTIVE');
    const reservationId = active.reservations[0].id;
    const cases: [Record<string, unknown>, number, string][] = [
      [
        { start_date: '2037-01-01 03:00' },
        400,
        'Cannot modify the start date of already started leases',
      ],
      [{ end_date: '2037-01-01 01:30' }, 400, 'End date must be later than current and start date'],
      [{ end_date: 'garbage' }, 400, 'garbage is an invalid date'],
      [{ reservations: [{ size: 2 }] }, 400, 'Missing parameter reservation ID'],
      [
        { reservations: [{ id: 'nope', size: 2 }] },
        400,
        'Please enter valid reservation IDs. Invalid reservation IDs are: nope',
      ],
      [
        { reservations: [{ id: reservationId, resource_type: 'physical:host' }] },
        409,
        'resource_type cannot be updated',
      ],
      [{ reservations: [{ id: reservationId, size: -1 }] }, 400, 'Malformed parameter size'],
    ];
    for (const [body, status, message] of cases) {
      const res = await t.http.put(`/v1/leases/${created.id}`).set(A).send(body).expect(status);
      expect(res.body.error_message).toContain(message);
    }
    const after = (await t.http.get(`/v1/leases/${created.id}`).set(A)).body.lease;
    expect(after).toEqual(active);

    // --prolong-for on an active lease works and reaches the plugin
    const updates = t.recorder.count('update', reservationId);
    const prolonged = await t.http
      .put(`/v1/leases/${created.id}`)
      .set(A)
      .send({ end_date: '2037-01-01 06:00', reservations: [{ id: reservationId, size: 4 }] })
      .expect(200);
    expect(prolonged.body.lease).toMatchObject({
      end_date: '2037-01-01T06:00:00.000000',
      status: 'ACTIVE',
    });
    expect(prolonged.body.lease.reservations[0].size).toBe(4);
    expect(t.recorder.count('update', reservationId)).toBe(updates + 1);

    t.clock.set(new Date('2037-01-01T07:00:00Z'));
    await t.settle();
    const over = await t.http
      .put(`/v1/leases/${created.id}`)
      .set(A)
      .send({ end_date: '2037-01-02 00:00' })
      .expect(400);
    expect(over.body.error_message).toBe('Terminated leases can only be renamed');
    await t.http.put(`/v1/leases/${created.id}`).set(A).send({ name: 'renamed-after' }).expect(200);
    t.clock.set(new Date('2037-01-01T00:00:00Z'));
  });

  it('should honour If-Match so that a stale writer gets 412 and changes nothing', async () => {
    const id = (await create({ name: 'versioned' }).expect(201)).body.lease.id;
    const stale = await t.http
      .put(`/v1/leases/${id}`)
      .set(A)
      .set('If-Match', '"7"')
      .send({ name: 'x' })
      .expect(412);
    expect(stale.body.error_type).toBe('PreconditionFailed');
    const ok = await t.http
      .put(`/v1/leases/${id}`)
      .set(A)
      .set('If-Match', '"1"')
      .send({ name: 'v2' })
      .expect(200);
    expect(ok.headers.etag).toBe('"2"');
    await t.http
      .put(`/v1/leases/${id}`)
      .set(A)
      .set('If-Match', '"1"')
      .send({ name: 'v3' })
      .expect(412);
    await t.http.delete(`/v1/leases/${id}`).set(A).set('If-Match', '"1"').expect(412);
    expect((await t.http.get(`/v1/leases/${id}`).set(A)).body.lease.name).toBe('v2');
    await t.http.delete(`/v1/leases/${id}`).set(A).set('If-Match', 'W/"2"').expect(204);
  });

  it('should release reservations through the plugin when a lease is deleted', async () => {
    const lease = (
      await create({ name: 'gone', reservations: [{ resource_type: 'test:recorder' }] }).expect(201)
    ).body.lease;
    const reservationId = lease.reservations[0].id;
    const before = await rows();
    await t.http.delete(`/v1/leases/${lease.id}`).set(A).expect(204);
    expect(t.recorder.count('release', reservationId)).toBe(1);
    expect(t.recorder.count('on_end', reservationId)).toBe(0);
    await t.http.get(`/v1/leases/${lease.id}`).set(A).expect(404);
    expect(await rows()).toEqual([before[0] - 1, before[1] - 1, before[2] - 3]);
  });

  it('should replay an Idempotency-Key instead of creating a second lease', async () => {
    const body = { name: 'once', start_date: '2037-04-01 00:00', end_date: '2037-04-02 00:00' };
    const key = 'key-123';
    const first = await t.http
      .post('/v1/leases')
      .set(A)
      .set('Idempotency-Key', key)
      .send(body)
      .expect(201);
    const again = await t.http
      .post('/v1/leases')
      .set(A)
      .set('Idempotency-Key', key)
      .send(body)
      .expect(201);
    expect(again.body.lease.id).toBe(first.body.lease.id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    const other = await t.http
      .post('/v1/leases')
      .set(A)
      .set('Idempotency-Key', key)
      .send({ ...body, name: 'twice' })
      .expect(409);
    expect(other.body.error_type).toBe('IdempotencyKeyReused');
    const otherProject = await t.http
      .post('/v1/leases')
      .set(B)
      .set('Idempotency-Key', key)
      .send(body)
      .expect(201);
    expect(otherProject.body.lease.id).not.toBe(first.body.lease.id);

    const racing = await Promise.all(
      Array.from({ length: 10 }, () =>
        t.http
          .post('/v1/leases')
          .set(A)
          .set('Idempotency-Key', 'race')
          .send({ ...body, name: 'race' }),
      ),
    );
    expect(new Set(racing.map((r) => r.status))).toEqual(new Set([201]));
    expect(new Set(racing.map((r) => r.body.lease.id)).size).toBe(1);
    const client = await connect(db.url);
    const count = await client.query(`SELECT count(*) FROM leases WHERE name = 'race'`);
    await client.end();
    expect(Number(count.rows[0].count)).toBe(1);
  });

  it('should replay an Idempotency-Key when the original start date has passed', async () => {
    const now = t.clock.now();
    const start = new Date(now.getTime() + 60_000).toISOString();
    const end = new Date(now.getTime() + 3_600_000).toISOString();
    const body = { name: 'late-replay', start_date: start, end_date: end };
    const first = await t.http
      .post('/v1/leases')
      .set(A)
      .set('Idempotency-Key', 'late')
      .send(body)
      .expect(201);
    t.clock.advance(120_000);
    // the client's retry arrives after the start: the same lease, not a 400
    const again = await t.http
      .post('/v1/leases')
      .set(A)
      .set('Idempotency-Key', 'late')
      .send(body)
      .expect(201);
    expect(again.body.lease.id).toBe(first.body.lease.id);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });
});
