import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

export interface WebhookMessage {
  message_id: string;
  publisher_id: string;
  event_type: string;
  priority: string;
  payload: Record<string, unknown> & { id: string; lease_id: string; status: string };
  timestamp: string;
}

export interface Delivery {
  headers: IncomingMessage['headers'];
  /** The body exactly as it arrived (what the signature covers). */
  raw: string;
  message: WebhookMessage;
  /** The status it was answered with; null when it was left without an answer. */
  status: number | null;
}

/**
 * A webhook receiver on a real HTTP port. It answers 204, unless told to answer 500 to
 * some deliveries, to hang on some (never answer), or to be down (nothing listening:
 * connection refused), and comes back up on the same port.
 */
export class WebhookReceiver {
  port = 0;
  /** Every request that reached it, answered or not. */
  readonly got: Delivery[] = [];
  private server: Server | null = null;
  private readonly refusals: ((m: WebhookMessage) => boolean)[] = [];
  private hangs = 0;
  private readonly held = new Set<ServerResponse>();

  get url(): string {
    return `http://127.0.0.1:${this.port}/hooks/climate?token=t0`;
  }

  /** The deliveries it answered 2xx, in arrival order. */
  get taken(): Delivery[] {
    return this.got.filter((d) => d.status !== null && d.status < 300);
  }

  /** Answer 500, once, to the next delivery `match` accepts. */
  refuseOnce(match: (m: WebhookMessage) => boolean = () => true): void {
    this.refusals.push(match);
  }

  /** Leave the next `n` deliveries without an answer. */
  hang(n = 1): void {
    this.hangs += n;
  }

  async listen(): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no receiver port');
    this.port = address.port;
    this.server = server;
  }

  /** Gone: connections dropped, new ones refused, until listen() again. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (server === null) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const res of this.held) res.destroy();
    this.held.clear();
    server.closeAllConnections();
    await closed;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const delivery: Delivery = {
        headers: req.headers,
        raw,
        message: JSON.parse(raw) as WebhookMessage,
        status: null,
      };
      this.got.push(delivery);
      if (this.hangs > 0) {
        this.hangs--;
        this.held.add(res);
        return;
      }
      const refusal = this.refusals.findIndex((match) => match(delivery.message));
      if (refusal >= 0) this.refusals.splice(refusal, 1);
      delivery.status = refusal >= 0 ? 500 : 204;
      res.writeHead(delivery.status).end();
    });
  }
}
