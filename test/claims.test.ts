import { createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts } from './support/hosts.js';

const owner = { 'X-Project-Id': 'owner', 'X-User-Id': 'o', 'X-Roles': 'member' };
const stranger = { 'X-Project-Id': 'stranger', 'X-User-Id': 's', 'X-Roles': 'member' };

describe('claims on instance reservations', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: { PLUGINS: 'virtual:instance', CPU_ALLOCATION_RATIO: '1', MAX_ALTERNATES: '2' },
    });
    t.clock.set(new Date('2042-01-01T00:00:00Z'));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function activeReservation(zone: string, amount: number, hosts: string[]) {
    await addHosts(t.http, hosts, () => ({ zone }));
    const res = await t.http
      .post('/v1/leases')
      .set(owner)
      .send({
        name: zone,
        start_date: 'now',
        end_date: '2042-01-02 00:00',
        reservations: [
          {
            resource_type: 'virtual:instance',
            vcpus: 4,
            memory_mb: 4096,
            disk_gb: 10,
            amount,
            affinity: false,
            resource_properties: `["==", "$zone", "${zone}"]`,
          },
        ],
      })
      .expect(201);
    await t.settle();
    return {
      leaseId: res.body.lease.id as string,
      reservationId: res.body.lease.reservations[0].id as string,
    };
  }

  it('should give exactly amount claims when more servers claim at once', async () => {
    const { leaseId, reservationId } = await activeReservation('burst', 3, [
      'burst-1',
      'burst-2',
      'burst-3',
    ]);
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        t.http
          .post(`/v1/reservations/${reservationId}/claims`)
          .set(owner)
          .send({ server_id: `srv-${i}` }),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    expect(results.filter((r) => r.status === 409)).toHaveLength(7);
    const hosts = results.filter((r) => r.status === 201).map((r) => r.body.claim.host as string);
    expect(hosts.sort()).toEqual(['burst-1', 'burst-2', 'burst-3']);
    const shown = (await t.http.get(`/v1/leases/${leaseId}`).set(owner)).body.lease.reservations[0];
    expect(shown.claims).toHaveLength(3);
    expect(shown.claims[0]).toEqual({
      id: expect.any(String),
      server_id: expect.any(String),
      host: expect.any(String),
    });
  });

  it('should answer a host and alternates, and let a failed build move to an alternate', async () => {
    const { reservationId } = await activeReservation('alt', 3, ['alt-1', 'alt-2', 'alt-3']);
    const first = await t.http
      .post(`/v1/reservations/${reservationId}/claims`)
      .set(owner)
      .send({ server_id: 'vm-a' })
      .expect(201);
    const claim = first.body.claim;
    expect(claim.alternates).toHaveLength(2);
    expect(claim.alternates).not.toContain(claim.host);
    // the build fails on the chosen host: release, then claim on the first alternate
    await t.http.delete(`/v1/claims/${claim.id}`).set(owner).expect(204);
    const moved = await t.http
      .post(`/v1/reservations/${reservationId}/claims`)
      .set(owner)
      .send({ server_id: 'vm-a', host: claim.alternates[0] })
      .expect(201);
    expect(moved.body.claim.host).toBe(claim.alternates[0]);
    // that host's only slot is taken now: a claim there is refused, the next alternate works
    const full = await t.http
      .post(`/v1/reservations/${reservationId}/claims`)
      .set(owner)
      .send({ server_id: 'vm-b', host: claim.alternates[0] })
      .expect(409);
    expect(full.body.error_type).toBe('NoFreeSlot');
    await t.http
      .post(`/v1/reservations/${reservationId}/claims`)
      .set(owner)
      .send({ server_id: 'vm-b', host: claim.alternates[1] })
      .expect(201);
    await t.http
      .post(`/v1/reservations/${reservationId}/claims`)
      .set(owner)
      .send({ server_id: 'vm-b' })
      .expect(409);
  });

  it('should keep other projects out and refuse bad requests', async () => {
    const { reservationId } = await activeReservation('guard', 1, ['guard-1']);
    await t.http
      .post(`/v1/reservations/${reservationId}/claims`)
      .set(stranger)
      .send({ server_id: 'x' })
      .expect(404);
    await t.http.post(`/v1/reservations/${reservationId}/claims`).set(owner).send({}).expect(400);
    await t.http
      .post('/v1/reservations/not-an-id/claims')
      .set(owner)
      .send({ server_id: 'x' })
      .expect(404);
    const ok = await t.http
      .post(`/v1/reservations/${reservationId}/claims`)
      .set(owner)
      .send({ server_id: 'x' })
      .expect(201);
    await t.http.delete(`/v1/claims/${ok.body.claim.id}`).set(stranger).expect(404);
    await t.http.delete(`/v1/claims/${ok.body.claim.id}`).set(owner).expect(204);
    await t.http.delete(`/v1/claims/${ok.body.claim.id}`).set(owner).expect(404);
  });

  it('should let the scheduler filter send the flavor only to the reservation hosts', async () => {
    const { reservationId } = await activeReservation('flt', 1, ['flt-1', 'flt-2']);
    const res = await t.http
      .post('/v1/scheduler/filter')
      .send({
        project_id: 'owner',
        hosts: ['flt-1', 'flt-2'],
        flavor_extra_specs: { 'aggregate_instance_extra_specs:reservation': reservationId },
      })
      .expect(200);
    expect(res.body.hosts).toHaveLength(1);
    const other = await t.http
      .post('/v1/scheduler/filter')
      .send({
        project_id: 'stranger',
        hosts: res.body.hosts,
        flavor_extra_specs: { 'aggregate_instance_extra_specs:reservation': reservationId },
      })
      .expect(200);
    expect(other.body.hosts).toEqual([]);
  });
});
