import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, healthFlags, hostReservation } from './support/hosts.js';
import { Maintenance } from '../src/events/maintenance.service.js';

const HOUR = 3600_000;

describe('pools, the scheduler filter and healing', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: { PLUGINS: 'physical:host', RECYCLE_GRACE_MINUTES: '30' },
    });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const asProject = (project: string) => ({
    'X-Project-Id': project,
    'X-User-Id': `${project}-user`,
    'X-Roles': 'member',
  });

  async function startLease(project: string, zone: string, extra: Record<string, unknown> = {}) {
    const created = await t.http
      .post('/v1/leases')
      .set(asProject(project))
      .send({
        name: `${project}-${zone}`,
        start_date: 'now',
        end_date: new Date(t.clock.now().getTime() + 2 * HOUR).toISOString(),
        reservations: [
          hostReservation({ resource_properties: `["==", "$zone", "${zone}"]`, ...extra }),
        ],
      })
      .expect(201);
    await t.settle();
    return {
      leaseId: created.body.lease.id as string,
      reservationId: created.body.lease.reservations[0].id as string,
    };
  }

  /** The explained answer, after checking the plain one passes the same hosts, unexplained. */
  async function filter(body: Record<string, unknown>) {
    const plain = await t.http.post('/v1/scheduler/filter').send(body).expect(200);
    const explained = await t.http.post('/v1/scheduler/filter?explain=true').send(body).expect(200);
    expect(plain.body).toEqual({ hosts: explained.body.hosts });
    return explained;
  }

  async function pool(host: string): Promise<string> {
    const pools = (await t.http.get('/v1/pools')).body.pools as {
      name: string;
      hosts: string[];
      kind: string;
    }[];
    return pools.find((p) => p.kind !== 'topology' && p.hosts.includes(host))?.name ?? 'none';
  }

  const flags = (leaseId: string) => healthFlags(t.http, leaseId);

  it('should keep reservation-pool hosts from requests without a hint and give a reservation its hosts', async () => {
    t.clock.set(new Date('2034-01-01T00:00:00Z'));
    await addHosts(t.http, ['sf-1', 'sf-2', 'sf-3'], (n) => ({
      zone: n === 'sf-3' ? 'other' : 'sf',
    }));
    const [sharedId] = await addHosts(t.http, ['sf-shared']);
    await t.http.put(`/v1/os-hosts/${sharedId}/pool`).send({ pool: 'shared' }).expect(200);
    const { reservationId } = await startLease('owner', 'sf', { extra_projects: ['friend'] });

    const plain = await filter({
      project_id: 'anyone',
      hosts: ['sf-1', 'sf-2', 'sf-3', 'sf-shared', 'unmanaged'],
    });
    expect(plain.body.hosts).toEqual(['sf-shared', 'unmanaged']);
    expect(Object.keys(plain.body.rejected).sort()).toEqual(['sf-1', 'sf-2', 'sf-3']);

    const owner = await filter({
      project_id: 'owner',
      hosts: ['sf-1', 'sf-2', 'sf-3'],
      hints: { reservation: reservationId },
    });
    expect(owner.body.hosts).toEqual(['sf-1']);
    expect(owner.body.rejected['sf-3']).toContain('not in reservation');

    const friend = await filter({
      project_id: 'friend',
      hosts: ['sf-1'],
      hints: { reservation: [reservationId] },
    });
    expect(friend.body.hosts).toEqual(['sf-1']);
    const stranger = await filter({
      project_id: 'stranger',
      hosts: ['sf-1'],
      hints: { reservation: reservationId },
    });
    expect(stranger.body.hosts).toEqual([]);
    expect(stranger.body.rejected['sf-1']).toBe(
      `reservation ${reservationId} belongs to another project`,
    );

    // no host list: every registered host is considered
    const everyone = await filter({ project_id: 'anyone' });
    expect(everyone.body.hosts).toContain('sf-shared');
    expect(everyone.body.hosts).not.toContain('sf-2');
    await t.http
      .post('/v1/scheduler/filter')
      .send({ hosts: ['sf-1'] })
      .expect(400);
  });

  it('should accept a fleet-sized host list on the filter when other routes keep the 100 KB limit', async () => {
    await addHosts(t.http, ['bf-pooled']);
    const fleet = Array.from({ length: 100_000 }, (_, i) => `big-fleet-${i}`);
    const body = { project_id: 'anyone', hosts: ['bf-pooled', ...fleet] };
    expect(JSON.stringify(body).length).toBeGreaterThan(1_500_000);
    const answer = await t.http.post('/v1/scheduler/filter').send(body).expect(200);
    // the pool host is refused; unknown hosts are not Climate's: they pass, in the order asked
    expect(answer.body.hosts).toEqual(fleet);
    expect(answer.body).not.toHaveProperty('rejected');
    await t.http
      .post('/v1/leases')
      .send({ name: 'x'.repeat(200_000) })
      .expect(413);
  });

  it('should move a host to the shared pool with its future allocations moved, or refuse and change nothing', async () => {
    t.clock.set(new Date('2034-02-01T00:00:00Z'));
    const [a, b] = await addHosts(t.http, ['mv-1', 'mv-2'], () => ({ zone: 'mv' }));
    const one = hostReservation({ resource_properties: '["==", "$zone", "mv"]' });
    const lease = await t.http
      .post('/v1/leases')
      .send({
        name: 'mv',
        start_date: '2034-03-01 00:00',
        end_date: '2034-03-02 00:00',
        reservations: [one],
      })
      .expect(201);
    const reservationId = lease.body.lease.reservations[0].id;
    const client = await connect(db.url);
    const hostOf = async () =>
      (
        await client.query(`SELECT host_id FROM host_allocations WHERE reservation_id = $1`, [
          reservationId,
        ])
      ).rows.map((r) => String(r.host_id));
    expect(await hostOf()).toEqual([a]);

    await t.http.put(`/v1/os-hosts/${a}/pool`).send({ pool: 'shared' }).expect(200);
    expect(await pool('mv-1')).toBe('shared');
    expect(await hostOf()).toEqual([b]);

    const refused = await t.http.put(`/v1/os-hosts/${b}/pool`).send({ pool: 'shared' }).expect(409);
    expect(refused.body.error_message).toContain(reservationId);
    expect(await pool('mv-2')).toBe('freepool');
    expect(await hostOf()).toEqual([b]);

    await t.http.put(`/v1/os-hosts/${a}/pool`).send({ pool: 'freepool' }).expect(200);
    expect(await pool('mv-1')).toBe('freepool');
    await t.http.put(`/v1/os-hosts/${a}/pool`).send({ pool: 'moon' }).expect(400);
    await client.end();
  });

  it('should replace a failed host, flag what cannot be replaced, and clear the flags when it heals', async () => {
    t.clock.set(new Date('2034-04-01T00:00:00Z'));
    const [h1] = await addHosts(t.http, ['heal-1', 'heal-2'], () => ({ zone: 'heal' }));
    const { leaseId, reservationId } = await startLease('p', 'heal');
    expect(await pool('heal-1')).toBe(reservationId);

    // heal-1 fails: its active reservation moves to heal-2, and the pool follows
    await t.http.put(`/v1/os-hosts/${h1}`).send({ reservable: false }).expect(200);
    expect(await pool('heal-2')).toBe(reservationId);
    expect(await pool('heal-1')).toBe('freepool');
    expect(await flags(leaseId)).toEqual({ degraded: false, missing: false, changed: true });

    // heal-2 fails too, with nowhere to go: missing resources, degraded lease
    const h2 = (await t.http.get('/v1/os-hosts')).body.hosts.find(
      (h: { hypervisor_hostname: string }) => h.hypervisor_hostname === 'heal-2',
    ).id;
    await t.http.put(`/v1/os-hosts/${h2}`).send({ reservable: 'false' }).expect(200);
    expect(await flags(leaseId)).toMatchObject({ degraded: true, missing: true });

    // heal-1 comes back: the periodic heal moves the reservation there and clears the flags
    await t.http.put(`/v1/os-hosts/${h1}`).send({ reservable: true }).expect(200);
    await t.app.get(Maintenance).run();
    expect(await flags(leaseId)).toMatchObject({ degraded: false, missing: false });
    expect(await pool('heal-1')).toBe(reservationId);
  });

  it('should hand hosts to the shared pool at the end unless another reservation holds them later', async () => {
    t.clock.set(new Date('2034-04-15T00:00:00Z'));
    await addHosts(t.http, ['sh-1', 'sh-2'], () => ({ zone: 'sh' }));
    const { leaseId } = await startLease('p', 'sh', { min: 2, max: 2, on_end: 'shared' });
    // a later lease already holds one of them
    const later = await t.http
      .post('/v1/leases')
      .send({
        name: 'sh-later',
        start_date: new Date(t.clock.now().getTime() + 3 * HOUR).toISOString(),
        end_date: new Date(t.clock.now().getTime() + 4 * HOUR).toISOString(),
        reservations: [hostReservation({ resource_properties: '["==", "$zone", "sh"]' })],
      })
      .expect(201);
    const client = await connect(db.url);
    const held = (
      await client.query(
        `SELECT h.hypervisor_hostname AS name FROM host_allocations a JOIN hosts h ON h.id = a.host_id
          WHERE a.reservation_id = $1`,
        [later.body.lease.reservations[0].id],
      )
    ).rows[0].name as string;
    await client.end();
    t.clock.advance(2 * HOUR);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${leaseId}`)).body.lease.status).toBe('TERMINATED');
    const other = held === 'sh-1' ? 'sh-2' : 'sh-1';
    expect(await pool(other)).toBe('shared');
    expect(await pool(held)).toBe('freepool');
    // and the later lease still has its host
    t.clock.advance(HOUR);
    await t.settle();
    expect(await pool(held)).toBe(later.body.lease.reservations[0].id);
  });

  it('should park hosts in the recycle pool at the end and release them after the grace period', async () => {
    t.clock.set(new Date('2034-05-01T00:00:00Z'));
    await addHosts(t.http, ['rc-1'], () => ({ zone: 'rc' }));
    const { leaseId } = await startLease('p', 'rc', { on_end: 'recycle' });
    t.clock.advance(2 * HOUR);
    await t.settle();
    expect((await t.http.get(`/v1/leases/${leaseId}`)).body.lease.status).toBe('TERMINATED');
    expect(await pool('rc-1')).toBe('recycle');
    // with the builtin driver there are no servers left, so the next sweep releases it
    await t.app.get(Maintenance).run();
    expect(await pool('rc-1')).toBe('freepool');
  });

  it('should count a host once per step it is reserved in, at exact step bounds', async () => {
    t.clock.set(new Date('2034-06-20T00:00:00Z'));
    await addHosts(t.http, ['cp-1', 'cp-2', 'cp-3'], () => ({ zone: 'cp' }));
    const on = async (host: string, start: string, end: string) =>
      t.http
        .post('/v1/leases')
        .send({
          name: `cp-${host}-${start}`,
          start_date: start,
          end_date: end,
          reservations: [
            hostReservation({ hypervisor_properties: `["==", "$hypervisor_hostname", "${host}"]` }),
          ],
        })
        .expect(201);
    await on('cp-1', '2034-07-01 02:00', '2034-07-01 04:00'); // two in one day: one host
    await on('cp-1', '2034-07-01 06:00', '2034-07-01 08:00');
    await on('cp-2', '2034-07-01 12:00', '2034-07-02 00:00'); // ends on the step bound
    await on('cp-3', '2034-06-30 20:00', '2034-07-01 00:00'); // ends where the plan starts
    await on('cp-3', '2034-07-03 06:00', '2034-07-03 07:00'); // in the short last step
    const cap = encodeURIComponent('["==", "$zone", "cp"]');
    const plan = await t.http
      .get(
        `/v1/os-hosts/capacity?start=2034-07-01%2000:00&end=2034-07-03%2012:00&step=1d&resource_properties=${cap}`,
      )
      .expect(200);
    expect(
      plan.body.capacity.map((c: Record<string, unknown>) => [
        c.start_date,
        c.end_date,
        c.total,
        c.reserved,
        c.free,
      ]),
    ).toEqual([
      ['2034-07-01T00:00:00.000000', '2034-07-02T00:00:00.000000', 3, 2, 1],
      ['2034-07-02T00:00:00.000000', '2034-07-03T00:00:00.000000', 3, 0, 3],
      ['2034-07-03T00:00:00.000000', '2034-07-03T12:00:00.000000', 3, 1, 2],
    ]);
  });

  it('should plan capacity per step and find the earliest windows with enough free hosts', async () => {
    t.clock.set(new Date('2034-06-01T00:00:00Z'));
    await addHosts(t.http, ['cap-1', 'cap-2'], () => ({ zone: 'cap' }));
    const cap = '["==", "$zone", "cap"]';
    await t.http
      .post('/v1/leases')
      .send({
        name: 'cap',
        start_date: '2034-06-02 00:00',
        end_date: '2034-06-03 00:00',
        reservations: [hostReservation({ resource_properties: cap })],
      })
      .expect(201);
    const plan = await t.http
      .get(
        `/v1/os-hosts/capacity?start=2034-06-01%2000:00&end=2034-06-04%2000:00&step=1d&resource_properties=${encodeURIComponent(cap)}`,
      )
      .expect(200);
    expect(
      plan.body.capacity.map((c: { reserved: number; free: number; total: number }) => [
        c.total,
        c.reserved,
        c.free,
      ]),
    ).toEqual([
      [2, 0, 2],
      [2, 1, 1],
      [2, 0, 2],
    ]);
    expect(plan.body.capacity[0]).toMatchObject({
      start_date: '2034-06-01T00:00:00.000000',
      end_date: '2034-06-02T00:00:00.000000',
      out_of_pool: 0,
    });

    const avail = await t.http
      .get(
        `/v1/os-hosts/availability?count=2&duration=12h&start=2034-06-01%2018:00&resource_properties=${encodeURIComponent(cap)}`,
      )
      .expect(200);
    expect(avail.body.availability[0]).toEqual({
      start_date: '2034-06-03T00:00:00.000000',
      end_date: '2034-06-03T12:00:00.000000',
      free_hosts: 2,
    });
    await t.http.get('/v1/os-hosts/capacity?start=2034-06-01%2000:00').expect(400);
    await t.http.get('/v1/os-hosts/availability?count=2&duration=soon').expect(400);
    await t.http
      .get('/v1/os-hosts/capacity?start=2034-06-01%2000:00&end=2040-01-01%2000:00&step=1m')
      .expect(400);
  });
});
