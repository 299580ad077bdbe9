import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openstackCall } from './openstack-http.js';

describe('openstackCall', () => {
  let server: Server;
  let url: string;

  beforeAll(async () => {
    // answers /ok at once and never answers /hang
    server = createServer((req, res) => {
      if (req.url === '/ok') res.end('{"a": 1}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('should return the status and the parsed body when the service answers', async () => {
    const res = await openstackCall({ method: 'GET', url: `${url}/ok`, token: 't' });
    expect(res).toMatchObject({ status: 200, body: { a: 1 } });
  });

  it('should fail with 504 in bounded time when the service does not answer', async () => {
    const started = Date.now();
    await expect(
      openstackCall({ method: 'GET', url: `${url}/hang`, token: 't', timeoutMs: 200 }),
    ).rejects.toMatchObject({ status: 504, errorName: 'ComputeServiceError' });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('should fail with 503 when nothing listens', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await expect(
      openstackCall({ method: 'GET', url: `http://127.0.0.1:${port}/`, token: 't' }),
    ).rejects.toMatchObject({ status: 503 });
  });
});
