import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';

/**
 * `forward`: both ways. `blackhole`: connections accepted, nothing forwarded or answered.
 * `mute`: what the client sends reaches the upstream; the upstream's answers are dropped.
 */
export type ProxyMode = 'forward' | 'blackhole' | 'mute';

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
    client.pipe(upstream);
    upstream.on('data', (data: Buffer) => {
      if (this.mode !== 'mute') client.write(data);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }
}
