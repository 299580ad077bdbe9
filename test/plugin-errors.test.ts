import type { Client } from 'pg';
import { ClimateError } from '../src/common/errors.js';
import { ComputeServiceError } from '../src/compute/openstack-http.js';
import type { Lease } from '../src/model/lease.entity.js';
import { callPlugin } from '../src/plugins/plugin-registry.js';
import type { ResourcePlugin } from '../src/plugins/resource-plugin.js';
import type { Reservation } from '../src/model/reservation.entity.js';
import { startApp, TestApp } from './support/app.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { RecorderPlugin } from './support/recorder-plugin.js';
import { createLease, leaseRow } from './support/seed.js';

jest.setTimeout(30_000);

/** A plugin whose compute service (Nova, say) answers 502 while `down` is set. */
class FlakyComputePlugin extends RecorderPlugin {
  down = false;

  override async onStart(r: Reservation, l: Lease): Promise<void> {
    if (this.down) throw new ComputeServiceError('Nova answered 502 to POST /os-aggregates');
    await super.onStart(r, l);
  }

  override async onEnd(r: Reservation, l: Lease): Promise<void> {
    if (this.down) throw new ComputeServiceError('DELETE /servers/x timed out', 504);
    await super.onEnd(r, l);
  }
}

describe('callPlugin', () => {
  const plugin = { resourceType: 'test:x' } as ResourcePlugin;

  it('should keep the status and name of a ClimateError when it adds the plugin name', async () => {
    const nova = new ComputeServiceError('Nova answered 502', 502);
    const error = await callPlugin(plugin, 'on_start', () => Promise.reject(nova), 1000).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ClimateError);
    expect(error).toMatchObject({ status: 502, errorName: 'ComputeServiceError', cause: nova });
    expect((error as Error).message).toBe('test:x on_start failed: Nova answered 502');
  });

  it('should fail with 504 when the action takes too long', async () => {
    const never = () => new Promise<never>(() => undefined);
    const error = await callPlugin(plugin, 'on_end', never, 20).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ClimateError);
    expect(error).toMatchObject({ status: 504 });
    expect((error as Error).message).toBe('test:x on_end timed out after 20 ms');
  });
});

describe('a compute service failing under a lease update or delete', () => {
  let db: TestDatabase;
  let client: Client;
  let t: TestApp;
  const plugin = new FlakyComputePlugin();

  beforeAll(async () => {
    db = await createTestDatabase();
    client = await connect(db.url);
    t = await startApp({ databaseUrl: db.url, recorder: plugin });
  });
  afterAll(async () => {
    await t?.close();
    await client?.end();
    await db?.drop();
  });
  afterEach(() => {
    plugin.down = false;
  });

  async function activeLease(name: string) {
    const lease = await createLease(t, { name, start: 'now', end: '2030-01-02 00:00' });
    await t.settle();
    expect((await leaseRow(client, lease.id)).status).toBe('ACTIVE');
    return lease;
  }

  it('should answer 200 with the saved lease when the refresh after an update fails', async () => {
    const lease = await activeLease('before-rename');
    plugin.down = true;

    const res = await t.http.put(`/v1/leases/${lease.id}`).send({ name: 'renamed' });

    expect(res.status).toBe(200);
    expect(res.body.lease).toMatchObject({ id: lease.id, name: 'renamed', status: 'ACTIVE' });
    expect(res.headers.etag).toBe('"2"');
    const shown = await t.http.get(`/v1/leases/${lease.id}`).expect(200);
    expect(shown.body.lease.name).toBe('renamed');
    expect(await leaseRow(client, lease.id)).toMatchObject({ status: 'ACTIVE', version: 2 });
  });

  it('should answer the compute service status, not 500, when a delete fails in it', async () => {
    const lease = await activeLease('to-delete');
    plugin.down = true;

    const res = await t.http.delete(`/v1/leases/${lease.id}`);

    expect(res.status).toBe(504);
    expect(res.body).toEqual({
      error_code: 504,
      error_name: 504,
      error_message: expect.stringContaining('on_end'),
      error_type: 'ComputeServiceError',
    });
    // Once the compute service is back, the delete goes through.
    plugin.down = false;
    await t.http.delete(`/v1/leases/${lease.id}`).expect(204);
    await t.http.get(`/v1/leases/${lease.id}`).expect(404);
  });
});
