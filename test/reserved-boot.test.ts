import { randomUUID } from 'node:crypto';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';

const env = { PLUGINS: 'physical:host,virtual:instance', CPU_ALLOCATION_RATIO: '1' };

/**
 * `--hint reserved=True --hint lease_params=…`: the scheduler filter's one call makes the
 * server's lease, as Nova's side of Climate sends it.
 */
describe('leases made by a boot with reserved=True', () => {
  let db: TestDatabase;
  let t: TestApp;
  const driver = new MemoryDriver();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env, driver });
    t.clock.set(new Date('2043-01-01T00:00:00Z'));
    await addHosts(t.http, ['rb-1', 'rb-2', 'plain-1']);
    // plain-1 is not Climate's to reserve: it joins the shared pool
    const hosts = (await t.http.get('/v1/os-hosts').expect(200)).body.hosts as {
      id: string;
      hypervisor_hostname: string;
    }[];
    const plain = hosts.find((h) => h.hypervisor_hostname === 'plain-1');
    await t.http.put(`/v1/os-hosts/${plain?.id}/pool`).send({ pool: 'shared' }).expect(200);
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  /** A server being scheduled: Nova shows it in BUILD with its flavor's size. */
  function building(project: string): string {
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
    return id;
  }

  const ask = (serverId: string, project: string, leaseParams: unknown, query = '') =>
    t.http.post(`/v1/scheduler/filter${query}`).send({
      hosts: ['rb-1', 'rb-2', 'plain-1'],
      project_id: project,
      user_id: 'u1',
      instance_uuid: serverId,
      hints: { reserved: 'True', lease_params: leaseParams },
      flavor_extra_specs: {},
    });

  async function leasesOf(project: string): Promise<{ id: string; name: string }[]> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query(
        `SELECT id, name FROM leases WHERE project_id = $1 ORDER BY created_at`,
        [project],
      );
      return rows;
    } finally {
      await client.end();
    }
  }

  it('should make one lease however often Nova asks, and keep a later lease off the pool', async () => {
    const server = building('night');
    const params = JSON.stringify({
      name: 'night-job',
      start: '2043-01-02 00:00',
      end: '2043-01-02 06:00',
    });
    const first = await ask(server, 'night', params).expect(200);
    // a lease for later: the server boots where plain servers go, never on pool hosts
    expect(first.body.hosts).toEqual(['plain-1']);
    expect(first.body).not.toHaveProperty('rejected');
    // asked again with the reasons: the same lease, and why the pool host is refused
    const explained = await ask(server, 'night', params, '?explain=true').expect(200);
    expect(explained.body.hosts).toEqual(['plain-1']);
    expect(explained.body.rejected).toHaveProperty('rb-1');
    // Nova retries the scheduling (a reschedule): still one lease
    await ask(server, 'night', params).expect(200);
    const leases = await leasesOf('night');
    expect(leases).toHaveLength(1);
    expect(leases[0].name).toBe('night-job');
    const shown = (
      await t.http
        .get(`/v1/leases/${leases[0].id}`)
        .set({ 'X-Project-Id': 'night', 'X-Roles': 'member' })
        .expect(200)
    ).body.lease;
    expect(shown).toMatchObject({ status: 'PENDING', user_id: 'u1' });
    expect(shown.reservations[0]).toMatchObject({
      resource_type: 'virtual:instance',
      server_id: server,
      vcpus: 2,
      amount: 1,
    });
  });

  it('should send a server whose lease starts now to its slot host only', async () => {
    const server = building('now');
    const res = await ask(
      server,
      'now',
      JSON.stringify({ name: 'at-once', start: 'now', end: '2043-01-01 03:00' }),
    ).expect(200);
    expect(res.body.hosts).toHaveLength(1);
    expect(['rb-1', 'rb-2']).toContain(res.body.hosts[0]);
    const [lease] = await leasesOf('now');
    const client = await connect(db.url);
    const { rows } = await client.query(
      `SELECT h.hypervisor_hostname AS host FROM instance_allocations a
         JOIN hosts h ON h.id = a.host_id JOIN reservations r ON r.id = a.reservation_id
        WHERE r.lease_id = $1`,
      [lease.id],
    );
    await client.end();
    expect(rows.map((r) => r.host)).toEqual(res.body.hosts);
  });

  it.each([
    ['not JSON', '{"name": '],
    ['no end', JSON.stringify({ name: 'x', start: 'now' })],
    ['a list', '[1]'],
    ['an unknown key', JSON.stringify({ name: 'x', start: 'now', end: '2043-01-01 03:00', x: 1 })],
    [
      'a past start',
      JSON.stringify({ name: 'x', start: '2000-01-01 00:00', end: '2000-01-02 00:00' }),
    ],
  ])('should refuse the boot and create nothing when lease_params is %s', async (_, params) => {
    const res = await ask(building('bad'), 'bad', params).expect(400);
    expect(res.body).toMatchObject({ error_code: 400 });
    expect(typeof res.body.error_message).toBe('string');
    expect(await leasesOf('bad')).toEqual([]);
  });

  it('should refuse a reserved boot of several servers at once and create nothing', async () => {
    const res = await t.http
      .post('/v1/scheduler/filter')
      .send({
        hosts: ['rb-1'],
        project_id: 'multi',
        instance_uuid: building('multi'),
        num_instances: 2,
        hints: {
          reserved: 'True',
          lease_params: '{"name":"a","start":"now","end":"2043-01-01 03:00"}',
        },
      })
      .expect(400);
    expect(res.body.error_message).toContain('one server at a time');
    expect(await leasesOf('multi')).toEqual([]);
  });

  it('should refuse a reserved boot that names no instance', async () => {
    await t.http
      .post('/v1/scheduler/filter')
      .send({
        project_id: 'p',
        hints: {
          reserved: 'True',
          lease_params: '{"name":"a","start":"now","end":"2043-01-01 03:00"}',
        },
      })
      .expect(400);
    expect(await leasesOf('p')).toEqual([]);
  });
});
