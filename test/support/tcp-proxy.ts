import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';

/**
 * `forward`: both ways. `blackhole`: connections accepted, nothing forwarded or answered.
 * `mute`: what the client sends reaches the upstream; the upstream's answers are dropped.
 */
export type ProxyMode = 'forward' | 'blackhole' | 'mute';

interface Pair {
  /** A silent partition: nothing forwarded either way, and no close passed on. */
  held: boolean;
}

/**
 * A TCP proxy in front of a real service (PostgreSQL, RabbitMQ) that a test can cut
 * (every socket destroyed, nothing listening: connection refused), put in another mode,
 * and restart on the same port.
 */
export class TcpProxy {
  port = 0;
  mode: ProxyMode = 'forward';
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly pairs = new Set<Pair>();

  constructor(
    private readonly upstreamHost: string,
    private readonly upstreamPort: number,
  ) {}

  async listen(): Promise<void> {
    const server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no proxy port');
    this.port = address.port;
    this.server = server;
  }

  /** The service is gone: open connections reset, new ones refused. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    const closed = new Promise<void>((resolve) =>
      server === null ? resolve() : server.close(() => resolve()),
    );
    this.dropAll();
    await closed;
  }

  /**
   * A silent partition: every open connection goes quiet for good in both directions, with
   * no FIN or RST on either side (a host losing power, a firewall dropping packets); new
   * connections are accepted and go nowhere until the mode is set back.
   */
  hold(): void {
    for (const pair of this.pairs) pair.held = true;
    this.mode = 'blackhole';
  }

  dropAll(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  }

  private accept(client: Socket): void {
    this.track(client);
    if (this.mode === 'blackhole') return;
    const upstream = tcpConnect(this.upstreamPort, this.upstreamHost);
    this.track(upstream);
    const pair: Pair = { held: false };
    this.pairs.add(pair);
    client.on('data', (data: Buffer) => {
      if (!pair.held) upstream.write(data);
    });
    upstream.on('data', (data: Buffer) => {
      if (!pair.held && this.mode !== 'mute') client.write(data);
    });
    client.on('end', () => {
      if (!pair.held) upstream.end();
    });
    client.on('close', () => {
      this.pairs.delete(pair);
      if (!pair.held) upstream.destroy();
    });
    upstream.on('close', () => {
      if (!pair.held) client.destroy();
    });
  }
}
