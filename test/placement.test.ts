import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts, hostReservation, names } from './support/hosts.js';

const WINDOW = { start_date: '2034-03-01 00:00', end_date: '2034-03-03 00:00' };

describe('placement keeps scarce hosts free', () => {
  let db: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: { PLUGINS: 'physical:host,virtual:instance', CPU_ALLOCATION_RATIO: '1' },
    });
    t.clock.set(new Date('2034-01-01T00:00:00Z'));
    const size = { vcpus: 64, memory_mb: 262144, local_gb: 2000 };
    // The GPU hosts first: in id order they would be taken first.
    await addHosts(t.http, names('gpu', 3), () => ({ ...size, gpu: 'true' }));
    await addHosts(t.http, names('cpu', 6), () => ({ ...size, gpu: 'false' }));
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  async function hostsOf(leaseId: string): Promise<string[]> {
    const client = await connect(db.url);
    try {
      const { rows } = await client.query<{ name: string }>(
        `SELECT DISTINCT h.hypervisor_hostname AS name
           FROM reservations r
           JOIN (SELECT reservation_id, host_id FROM host_allocations
                 UNION ALL SELECT reservation_id, host_id FROM instance_allocations) a
             ON a.reservation_id = r.id
           JOIN hosts h ON h.id = a.host_id
          WHERE r.lease_id = $1 ORDER BY 1`,
        [leaseId],
      );
      return rows.map((r) => r.name);
    } finally {
      await client.end();
    }
  }

  it('should put 100 two-vCPU slots without a property filter on CPU hosts, not the GPU ones', async () => {
    const res = await t.http
      .post('/v1/leases')
      .send({
        name: 'slots',
        ...WINDOW,
        reservations: [
          {
            resource_type: 'virtual:instance',
            vcpus: 2,
            memory_mb: 2048,
            disk_gb: 10,
            amount: 100,
            affinity: null,
            resource_properties: '',
          },
        ],
      })
      .expect(201);
    const used = await hostsOf(res.body.lease.id);
    expect(used.length).toBeGreaterThan(0);
    expect(used.filter((n) => n.startsWith('gpu'))).toEqual([]);
  });

  it('should leave the GPU hosts to a request for them in the same window', async () => {
    const res = await t.http
      .post('/v1/leases')
      .send({
        name: 'gpus',
        ...WINDOW,
        reservations: [
          hostReservation({ min: 3, max: 3, resource_properties: '["==", "$gpu", "true"]' }),
        ],
      })
      .expect(201);
    expect(await hostsOf(res.body.lease.id)).toEqual(names('gpu', 3));
  });

  it('should pick CPU hosts first for a host lease without a property filter', async () => {
    const res = await t.http
      .post('/v1/leases')
      .send({
        name: 'hosts',
        start_date: '2034-04-01 00:00',
        end_date: '2034-04-02 00:00',
        reservations: [hostReservation({ min: 6, max: 6 })],
      })
      .expect(201);
    expect(await hostsOf(res.body.lease.id)).toEqual(names('cpu', 6));
  });
});
