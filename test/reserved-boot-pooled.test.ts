import { randomUUID } from 'node:crypto';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation } from './support/hosts.js';
import { MemoryDriver } from './support/memory-driver.js';
import { Maintenance } from '../src/events/maintenance.service.js';

const env = { PLUGINS: 'physical:host,virtual:instance', CPU_ALLOCATION_RATIO: '1' };
const HOSTS = ['pool-1', 'pool-2', 'pool-3'];

/**
 * `--hint reserved=True` for a later lease on a cloud where every host is in the
 * reservation pool: the server waits on a free pool host no lease holds now, or the boot
 * is refused and its lease deleted.
 */
describe('reserved boots for later when every host is in the reservation pool', () => {
  let db: TestDatabase;
  let t: TestApp;
  const driver = new MemoryDriver();

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({ databaseUrl: db.url, env, driver });
    t.clock.set(new Date('2043-01-01T00:00:00Z'));
    await addHosts(t.http, HOSTS);
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

  const later = JSON.stringify({
    name: 'later',
    start: '2043-01-01 00:02',
    end: '2043-01-01 01:00',
  });

  const ask = (serverId: string, project: string, leaseParams: string, extra = {}, query = '') =>
    t.http.post(`/v1/scheduler/filter${query}`).send({
      hosts: HOSTS,
      project_id: project,
      user_id: 'u1',
      instance_uuid: serverId,
      hints: { reserved: 'True', lease_params: leaseParams },
      flavor_extra_specs: {},
      ...extra,
    });

  async function rows<T>(text: string, params: unknown[]): Promise<T[]> {
    const client = await connect(db.url);
    try {
      return (await client.query(text, params)).rows as T[];
    } finally {
      await client.end();
    }
  }

  const leasesOf = (project: string) =>
    rows<{ id: string; status: string }>(
      `SELECT id, status FROM leases WHERE project_id = $1 ORDER BY created_at`,
      [project],
    );

  /** Another project holds `hosts` from now on (started, so in its reservation's pool). */
  async function holdNow(project: string, hosts: string[]): Promise<string> {
    const names = hosts.map((h) => `"${h}"`).join(', ');
    const res = await t.http
      .post('/v1/leases')
      .set({ 'X-Project-Id': project, 'X-Roles': 'member' })
      .send({
        name: `${project}-hold`,
        start_date: 'now',
        end_date: '2043-01-01 00:01',
        reservations: [
          hostReservation({
            min: hosts.length,
            max: hosts.length,
            hypervisor_properties: `["in", "$hypervisor_hostname", ${names}]`,
          }),
        ],
      })
      .expect(201);
    await t.settle();
    return res.body.lease.id as string;
  }

  async function release(project: string, leaseId: string): Promise<void> {
    await t.http
      .delete(`/v1/leases/${leaseId}`)
      .set({ 'X-Project-Id': project, 'X-Roles': 'member' })
      .expect(204);
  }

  it('should pass the free pool hosts no lease holds now, for a lease that starts later', async () => {
    const held = await holdNow('other', ['pool-2']);
    try {
      const server = building('night');
      const first = await ask(server, 'night', later).expect(200);
      expect(first.body).toEqual({ hosts: ['pool-1', 'pool-3'] });
      // asked again, with reasons: the same lease, and why the held host is refused
      const explained = await ask(server, 'night', later, {}, '?explain=true').expect(200);
      expect(explained.body.hosts).toEqual(['pool-1', 'pool-3']);
      expect(Object.keys(explained.body.rejected)).toEqual(['pool-2']);
      // asked about every host (no list): the same hosts
      const fleet = await ask(server, 'night', later, { hosts: undefined }).expect(200);
      expect(fleet.body.hosts).toEqual(['pool-1', 'pool-3']);
      const leases = await leasesOf('night');
      expect(leases).toEqual([{ id: expect.any(String), status: 'PENDING' }]);
    } finally {
      await release('other', held);
    }
  });

  it('should keep off a host whose lease has not been started yet or that runs slots now', async () => {
    // a host lease for now that the manager has not started: the host is still in the
    // free pool, but held
    const hostLease = await t.http
      .post('/v1/leases')
      .set({ 'X-Project-Id': 'quick', 'X-Roles': 'member' })
      .send({
        name: 'quick-hold',
        start_date: 'now',
        end_date: '2043-01-01 00:01',
        reservations: [
          hostReservation({ hypervisor_properties: '["==", "$hypervisor_hostname", "pool-1"]' }),
        ],
      })
      .expect(201);
    // another project's instance slot running now, on a host Climate picks
    const slotLease = await t.http
      .post('/v1/leases')
      .set({ 'X-Project-Id': 'slots', 'X-Roles': 'member' })
      .send({
        name: 'slots-now',
        start_date: 'now',
        end_date: '2043-01-01 00:01',
        reservations: [
          {
            resource_type: 'virtual:instance',
            vcpus: 1,
            memory_mb: 512,
            disk_gb: 1,
            amount: 1,
            affinity: null,
            resource_properties: '',
          },
        ],
      })
      .expect(201);
    const [slot] = await rows<{ host: string }>(
      `SELECT h.hypervisor_hostname AS host FROM instance_allocations a
         JOIN hosts h ON h.id = a.host_id JOIN reservations r ON r.id = a.reservation_id
        WHERE r.lease_id = $1`,
      [slotLease.body.lease.id],
    );
    expect(slot.host).not.toBe('pool-1');
    try {
      const res = await ask(building('busy'), 'busy', later).expect(200);
      expect(res.body.hosts).toEqual(HOSTS.filter((h) => h !== 'pool-1' && h !== slot.host));
    } finally {
      await release('quick', hostLease.body.lease.id);
      await release('slots', slotLease.body.lease.id);
      const [busy] = await leasesOf('busy');
      await release('busy', busy.id);
    }
  });

  it('should delete the lease of a reserved server that Nova put in ERROR before its start', async () => {
    const failed = building('broken');
    const waiting = building('broken');
    await ask(failed, 'broken', later).expect(200);
    await ask(waiting, 'broken', later.replace('"later"', '"waiting"')).expect(200);
    expect(await leasesOf('broken')).toHaveLength(2);
    // Nova gave up on one boot after Climate passed hosts (e.g. it failed on its host)
    const server = driver.shelved.get(failed);
    if (server === undefined) throw new Error('no server');
    server.status = 'ERROR';
    await t.app.get(Maintenance).run();
    const left = await rows<{ server_id: string }>(
      `SELECT r.params ->> 'server_id' AS server_id FROM leases l
         JOIN reservations r ON r.lease_id = l.id WHERE l.project_id = $1`,
      ['broken'],
    );
    expect(left).toEqual([{ server_id: waiting }]);
    // run again: nothing more goes (the delete is done once)
    await t.app.get(Maintenance).run();
    expect(await leasesOf('broken')).toHaveLength(1);
    await release('broken', (await leasesOf('broken'))[0].id);
  });

  it('should still send a server whose lease starts now to its slot host only', async () => {
    const server = building('now');
    const res = await ask(
      server,
      'now',
      JSON.stringify({ name: 'at-once', start: 'now', end: '2043-01-01 03:00' }),
    ).expect(200);
    expect(res.body.hosts).toHaveLength(1);
    const [lease] = await leasesOf('now');
    const slots = await rows<{ host: string }>(
      `SELECT h.hypervisor_hostname AS host FROM instance_allocations a
         JOIN hosts h ON h.id = a.host_id JOIN reservations r ON r.id = a.reservation_id
        WHERE r.lease_id = $1`,
      [lease.id],
    );
    expect(slots.map((s) => s.host)).toEqual(res.body.hosts);
    await release('now', lease.id);
  });

  it('should refuse the boot and delete its lease when every host is held now', async () => {
    const held = await holdNow('holder', HOSTS);
    try {
      const server = building('late');
      const res = await ask(server, 'late', later).expect(409);
      expect(res.body).toMatchObject({ error_code: 409, error_type: 'NotEnoughHostsAvailable' });
      expect(res.body.error_message).toContain(server);
      expect(res.body.error_message).toContain('deleted');
      expect(await leasesOf('late')).toEqual([]);
      // nothing of it is left holding a slot
      const slots = await rows(
        `SELECT 1 FROM reservations r JOIN instance_allocations a ON a.reservation_id = r.id
          WHERE r.params ->> 'server_id' = $1`,
        [server],
      );
      expect(slots).toEqual([]);
      // Nova asks again for the same server: no host, and no lease made again
      const again = await ask(server, 'late', later).expect(200);
      expect(again.body.hosts).toEqual([]);
      expect(await leasesOf('late')).toEqual([]);
      // the holder's lease is untouched
      expect((await leasesOf('holder'))[0].status).toBe('ACTIVE');
    } finally {
      await release('holder', held);
    }
  });
});
