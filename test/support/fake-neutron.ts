import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeFloatingIp {
  id: string;
  floating_network_id: string;
  floating_ip_address: string;
  project_id: string;
  port_id: string | null;
  tags: string[];
}

/**
 * A Keystone that hands out one token whose catalog has a `network` endpoint, and that
 * endpoint: the part of Neutron's API v2.0 floating IPs use (networks, subnets,
 * floating IPs, their tags), in memory. Tests arm failures (`failNext`) and stalls.
 * The real Neutron is tested in test/openstack/floatingip.test.ts.
 */
export class FakeNeutron {
  readonly networks = new Map<
    string,
    {
      subnets: {
        id: string;
        cidr: string;
        gateway_ip: string | null;
        allocation_pools: { start: string; end: string }[];
      }[];
    }
  >();
  readonly floatingips = new Map<string, FakeFloatingIp>();
  /** Calls seen, as `METHOD path`. */
  readonly calls: string[] = [];
  /** Answer 500 to the next call whose `METHOD path` starts with one of these. */
  readonly failNext = new Set<string>();
  /** Hold calls whose `METHOD path` starts with this, until `release()`. */
  stall: string | null = null;
  private readonly held: ServerResponse[] = [];
  private server: Server | null = null;
  private seq = 0;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** Stops stalling; the calls held so far get a 503. */
  release(): void {
    this.stall = null;
    for (const res of this.held.splice(0)) this.send(res, 503, { NeutronError: {} });
  }

  /** Climate's settings for this Keystone, with COMPUTE_DRIVER=nova. */
  env(): Record<string, string> {
    return {
      COMPUTE_DRIVER: 'nova',
      KEYSTONE_URL: `${this.url}/v3`,
      SERVICE_PASSWORD: 'secret',
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let text = '';
    for await (const chunk of req) text += String(chunk);
    const url = new URL(req.url ?? '/', this.url);
    const call = `${req.method} ${url.pathname}`;
    if (!url.pathname.startsWith('/v3')) this.calls.push(`${call}${url.search}`);
    if (this.stall !== null && call.startsWith(this.stall)) {
      this.held.push(res);
      return;
    }
    for (const prefix of this.failNext) {
      if (call.startsWith(prefix)) {
        this.failNext.delete(prefix);
        return this.send(res, 500, { NeutronError: { message: 'injected failure' } });
      }
    }
    const body = text === '' ? {} : (JSON.parse(text) as Record<string, unknown>);
    const [status, answer, headers] = this.answer(req.method ?? 'GET', url, body);
    this.send(res, status, answer, headers);
  }

  private send(res: ServerResponse, status: number, body: unknown, headers = {}): void {
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
    res.end(body === null ? '' : JSON.stringify(body));
  }

  private answer(
    method: string,
    url: URL,
    body: Record<string, unknown>,
  ): [number, unknown, Record<string, string>?] {
    const path = url.pathname;
    if (method === 'POST' && path === '/v3/auth/tokens') {
      const token = {
        user: { id: 'climate' },
        expires_at: new Date(Date.now() + 3600_000).toISOString(),
        // Every interface, as a deployed catalog lists it (Climate asks for KEYSTONE_INTERFACE).
        catalog: [
          {
            type: 'network',
            endpoints: ['public', 'internal', 'admin'].map((i) => ({
              interface: i,
              url: this.url,
            })),
          },
        ],
      };
      return [201, { token }, { 'X-Subject-Token': 'service-token' }];
    }
    let m = /^\/v2\.0\/networks\/([^/]+)$/.exec(path);
    if (method === 'GET' && m) {
      const id = decodeURIComponent(m[1]);
      return this.networks.has(id) ? [200, { network: { id } }] : [404, { NeutronError: {} }];
    }
    if (method === 'GET' && path === '/v2.0/subnets') {
      const net = this.networks.get(url.searchParams.get('network_id') ?? '');
      return [200, { subnets: net?.subnets ?? [] }];
    }
    if (method === 'GET' && path === '/v2.0/floatingips') {
      const q = url.searchParams;
      const list = [...this.floatingips.values()].filter(
        (f) =>
          (!q.has('floating_ip_address') ||
            f.floating_ip_address === q.get('floating_ip_address')) &&
          (!q.has('floating_network_id') ||
            f.floating_network_id === q.get('floating_network_id')) &&
          (!q.has('tags') || (q.get('tags') ?? '').split(',').every((t) => f.tags.includes(t))),
      );
      return [200, { floatingips: list }];
    }
    if (method === 'POST' && path === '/v2.0/floatingips') {
      const f = body.floatingip as Record<string, string>;
      const taken = [...this.floatingips.values()].some(
        (x) => x.floating_ip_address === f.floating_ip_address,
      );
      if (taken) return [409, { NeutronError: { type: 'IpAddressAlreadyAllocated' } }];
      const fip: FakeFloatingIp = {
        id: `fip-${++this.seq}`,
        floating_network_id: f.floating_network_id,
        floating_ip_address: f.floating_ip_address,
        project_id: f.project_id,
        port_id: null,
        tags: [],
      };
      this.floatingips.set(fip.id, fip);
      return [201, { floatingip: fip }];
    }
    m = /^\/v2\.0\/floatingips\/([^/]+)(\/tags)?$/.exec(path);
    const fip = m ? this.floatingips.get(m[1]) : undefined;
    if (m && fip === undefined) return [404, { NeutronError: {} }];
    if (fip && method === 'PUT' && m?.[2]) {
      fip.tags = body.tags as string[];
      return [200, { tags: fip.tags }];
    }
    if (fip && method === 'PUT') {
      fip.port_id = (body.floatingip as { port_id: string | null }).port_id;
      return [200, { floatingip: fip }];
    }
    if (fip && method === 'DELETE') {
      this.floatingips.delete(fip.id);
      return [204, null];
    }
    return [404, { NeutronError: { message: `no route ${method} ${path}` } }];
  }
}
