import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { WebhookSender } from '../src/notifications/webhook-sender.js';
import { sleep } from './support/seed.js';

/**
 * A receiver in its own process, so it answers while this one is kept from running: it
 * answers 204 at once, or after `?delay=ms`, and prints each message id it read.
 */
const RECEIVER = `
const { createServer } = require('node:http');
const server = createServer((req, res) => {
  const delay = Number(new URL(req.url, 'http://x').searchParams.get('delay') ?? 0);
  req.resume();
  req.on('end', () => {
    process.stdout.write('got ' + req.headers['x-climate-message-id'] + '\\n');
    setTimeout(() => res.writeHead(204).end(), delay);
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write('port ' + server.address().port + '\\n'));
`;

/** Keeps this process's event loop from running for `ms`, as the CPU taken by others does. */
function stall(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end);
}

describe('webhook POSTs from a process starved of CPU', () => {
  let child: ChildProcess;
  let port = 0;
  const got: string[] = [];
  const sender = new WebhookSender();

  beforeAll(async () => {
    child = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    port = await new Promise<number>((resolve) => {
      lines.on('line', (line) => {
        const [word, value] = line.split(' ');
        if (word === 'port') resolve(Number(value));
        if (word === 'got') got.push(value);
      });
    });
  });
  afterAll(() => {
    sender.onApplicationShutdown();
    child.kill('SIGKILL');
  });

  /**
   * `count` POSTs, 8 at once, while every turn of the loop is held up `turnMs` at its end
   * (the check phase), as when the CPU goes to others: the next turn starts with its
   * timers already due and the answers already in the sockets.
   */
  async function starvedPosts(count: number, turnMs: number, query = '', timeoutMs = 1000) {
    let stopped = false;
    const spin = (): void => {
      stall(turnMs);
      if (!stopped) burden = setImmediate(spin);
    };
    let burden = setImmediate(spin);
    try {
      let next = 0;
      const results: string[] = [];
      const worker = async () => {
        for (let i = next++; i < count; i = next++) {
          const id = `m-${turnMs}-${query}-${i}`;
          const outcome = await sender.post(
            `http://127.0.0.1:${port}/hook${query}`,
            { 'Content-Type': 'application/json', 'X-Climate-Message-Id': id },
            JSON.stringify({ message_id: id }),
            timeoutMs,
          );
          results.push(outcome.result);
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      return results;
    } finally {
      stopped = true;
      clearImmediate(burden);
    }
  }

  it('should take every answer that came while the process could not run (no timeout, no repeat)', async () => {
    const before = got.length;
    // Each stall outlasts the timeout: the deadline is always past when the loop runs again.
    const results = await starvedPosts(24, 600, '', 300);
    expect(results.filter((r) => r !== 'delivered')).toEqual([]);
    // Each reached the receiver once: nothing was given up and sent again.
    await sleep(500);
    expect(got.length - before).toBe(24);
  });

  it('should still time out a receiver that really takes longer than the timeout', async () => {
    const results = await starvedPosts(8, 100, '?delay=3000', 500);
    expect(results).toEqual(Array(8).fill('timeout'));
  });
});
