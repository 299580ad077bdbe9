import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation } from './support/hosts.js';

const member = { 'X-Project-Id': 'p1', 'X-User-Id': 'u1', 'X-Roles': 'member' };

describe('/v1/os-hosts', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env: { PLUGINS: 'physical:host' } });
    t.clock.set(new Date('2033-01-01T00:00:00Z'));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('should register a host with its inventory and flatten capabilities when an admin posts one', async () => {
    const res = await t.http
      .post('/v1/os-hosts')
      .send({
        name: 'api-1',
        vcpus: '16',
        memory_mb: 65536,
        local_gb: '500',
        gpu: 'True',
        rack: 'r9',
      })
      .expect(201);
    expect(res.body.host).toMatchObject({
      hypervisor_hostname: 'api-1',
      vcpus: 16,
      memory_mb: 65536,
      local_gb: 500,
      gpu: 'True',
      rack: 'r9',
      reservable: true,
      status: null,
      pool: 'freepool',
    });
    expect(res.body.host.id).toMatch(/^[0-9]+$/);
    const shown = await t.http.get(`/v1/os-hosts/${res.body.host.id}`).expect(200);
    expect(shown.body.host).toEqual(res.body.host);
    const listed = await t.http.get('/v1/os-hosts').expect(200);
    expect(
      listed.body.hosts.map((h: { hypervisor_hostname: string }) => h.hypervisor_hostname),
    ).toContain('api-1');
    const pools = (await t.http.get('/v1/pools').expect(200)).body.pools as {
      name: string;
      kind: string;
      hosts: string[];
    }[];
    expect(pools.find((p) => p.name === 'rack:r9')).toMatchObject({
      kind: 'topology',
      hosts: ['api-1'],
    });
  });

  it.each([
    [
      {
        name: 'long',
        ['extra_capability_key_should_be_shorter_than_64_ABCDEFGHIJKLMNOPQRSTUVWXYZ']: 'foo',
      },
      400,
      'Extra capability key too long',
    ],
    [{ vcpus: 4 }, 400, 'Missing parameter name'],
    [{ name: 'api-1' }, 409, 'Host api-1 is already registered'],
    [{ name: 'neg', vcpus: -2 }, 400, 'Malformed parameter vcpus'],
  ])('should refuse %j with %i', async (body, status, message) => {
    const before = (await t.http.get('/v1/os-hosts')).body.hosts.length;
    const res = await t.http.post('/v1/os-hosts').send(body).expect(status);
    expect(res.body.error_message).toContain(message);
    expect((await t.http.get('/v1/os-hosts')).body.hosts.length).toBe(before);
  });

  it('should refuse every host endpoint to a non-admin with 403', async () => {
    const [id] = await addHosts(t.http, ['guarded']);
    const calls = [
      t.http.get('/v1/os-hosts'),
      t.http.post('/v1/os-hosts').send({ name: 'x' }),
      t.http.get(`/v1/os-hosts/${id}`),
      t.http.put(`/v1/os-hosts/${id}`).send({ a: 'b' }),
      t.http.delete(`/v1/os-hosts/${id}`),
      t.http.get('/v1/os-hosts/properties'),
      t.http.patch('/v1/os-hosts/properties/gpu').send({ private: true }),
      t.http.get('/v1/os-hosts/allocations'),
      t.http.get(`/v1/os-hosts/${id}/allocation`),
      // Capacity and availability are open to project readers (climate:capacity:get,
      // climate:availability:get): test/policy-matrix.test.ts covers them.
      t.http.put(`/v1/os-hosts/${id}/pool`).send({ pool: 'shared' }),
      t.http.post('/v1/scheduler/filter').send({ project_id: 'p1' }),
      t.http.get('/v1/pools'),
    ];
    for (const call of calls) {
      const res = await call.set(member);
      expect(res.status).toBe(403);
      expect(res.body.error_type).toBe('PolicyNotAuthorized');
    }
    expect((await t.http.get(`/v1/os-hosts/${id}`)).body.host.hypervisor_hostname).toBe('guarded');
  });

  it('should answer 404 for an unknown or malformed host id', async () => {
    for (const id of ['999999', 'nope', '1.5']) {
      const res = await t.http.get(`/v1/os-hosts/${id}`).expect(404);
      expect(res.body.error_message).toBe(`Object with {'host_id': '${id}'} not found`);
    }
  });

  it('should list properties with their values and hide private ones unless all is asked', async () => {
    await addHosts(t.http, ['prop-1', 'prop-2'], (n) => ({
      colour: n === 'prop-1' ? 'red' : 'blue',
    }));
    const plain = await t.http.get('/v1/os-hosts/properties').expect(200);
    expect(plain.body.resource_properties).toContainEqual({ property: 'colour' });
    const detail = await t.http.get('/v1/os-hosts/properties?detail=True').expect(200);
    expect(detail.body.resource_properties).toContainEqual({
      property: 'colour',
      private: false,
      values: ['blue', 'red'],
    });
    const patched = await t.http
      .patch('/v1/os-hosts/properties/colour')
      .send({ private: true })
      .expect(200);
    expect(patched.body.resource_property).toMatchObject({
      property_name: 'colour',
      private: true,
      resource_type: 'physical:host',
    });
    const hidden = await t.http.get('/v1/os-hosts/properties?detail=False').expect(200);
    expect(hidden.body.resource_properties).not.toContainEqual({ property: 'colour' });
    const all = await t.http.get('/v1/os-hosts/properties?detail=true&all=true').expect(200);
    expect(all.body.resource_properties).toContainEqual({
      property: 'colour',
      private: true,
      values: ['blue', 'red'],
    });
    await t.http.patch('/v1/os-hosts/properties/unknown').send({ private: true }).expect(404);
  });

  it('should show allocations per host as Blazar does, with lease and reservation filters', async () => {
    const [hostId] = await addHosts(t.http, ['alloc-1'], () => ({ zone: 'alloc' }));
    const one = hostReservation({ resource_properties: '["==", "$zone", "alloc"]' });
    const l1 = await t.http
      .post('/v1/leases')
      .send({
        name: 'l1',
        start_date: '2050-01-01 10:00',
        end_date: '2050-01-01 11:00',
        reservations: [one],
      })
      .expect(201);
    const l2 = await t.http
      .post('/v1/leases')
      .send({
        name: 'l2',
        start_date: '2050-01-01 12:00',
        end_date: '2050-01-01 13:00',
        reservations: [one],
      })
      .expect(201);
    const all = await t.http.get('/v1/os-hosts/allocations').expect(200);
    const entry = all.body.allocations.find(
      (a: { resource_id: string }) => a.resource_id === hostId,
    );
    expect(entry.reservations).toEqual([
      {
        id: l1.body.lease.reservations[0].id,
        lease_id: l1.body.lease.id,
        start_date: '2050-01-01T10:00:00.000000',
        end_date: '2050-01-01T11:00:00.000000',
      },
      {
        id: l2.body.lease.reservations[0].id,
        lease_id: l2.body.lease.id,
        start_date: '2050-01-01T12:00:00.000000',
        end_date: '2050-01-01T13:00:00.000000',
      },
    ]);
    // one entry per host, including hosts without reservations
    expect(all.body.allocations.length).toBe((await t.http.get('/v1/os-hosts')).body.hosts.length);
    const byLease = await t.http
      .get(`/v1/os-hosts/allocations?lease_id=${l2.body.lease.id}`)
      .expect(200);
    const withL2 = byLease.body.allocations.filter(
      (a: { reservations: unknown[] }) => a.reservations.length > 0,
    );
    expect(withL2).toHaveLength(1);
    expect(withL2[0].reservations.map((r: { lease_id: string }) => r.lease_id)).toEqual([
      l2.body.lease.id,
    ]);
    const single = await t.http
      .get(`/v1/os-hosts/${hostId}/allocation?reservation_id=${l1.body.lease.reservations[0].id}`)
      .expect(200);
    expect(single.body.allocation.reservations).toHaveLength(1);
    await t.http.get('/v1/os-hosts/allocations?lease_id=not-an-id').expect(400);

    // guards: no delete of an allocated host, no change of a capability a reservation uses
    const del = await t.http.delete(`/v1/os-hosts/${hostId}`).expect(409);
    expect(del.body.error_message).toBe(`Can't delete host ${hostId}. The host is reserved.`);
    const upd = await t.http.put(`/v1/os-hosts/${hostId}`).send({ zone: 'elsewhere' }).expect(409);
    expect(upd.body.error_message).toBe(`Can't add extracapabilities [zone] to Host ${hostId}`);
    await t.http.put(`/v1/os-hosts/${hostId}`).send({ zone: 'alloc', note: 'fine' }).expect(200);
    await t.http.put(`/v1/os-hosts/${hostId}`).send({}).expect(400);

    await t.http.delete(`/v1/leases/${l1.body.lease.id}`).expect(204);
    await t.http.delete(`/v1/leases/${l2.body.lease.id}`).expect(204);
    await t.http.put(`/v1/os-hosts/${hostId}`).send({ zone: 'elsewhere' }).expect(200);
    await t.http.delete(`/v1/os-hosts/${hostId}`).expect(204);
    await t.http.get(`/v1/os-hosts/${hostId}`).expect(404);
  });
});
