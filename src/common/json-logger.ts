import { LoggerService } from '@nestjs/common';
import type { LogLevel } from '../config/config.js';
import { requestContext } from './request-context.js';

const RANK: Record<LogLevel, number> = { error: 0, warn: 1, info: 2, debug: 3 };

/** One JSON object per line on stdout, with the request id when there is one. */
export class JsonLogger implements LoggerService {
  constructor(
    private readonly level: LogLevel = 'info',
    private readonly write: (line: string) => void = (line) => process.stdout.write(line + '\n'),
  ) {}

  log(message: unknown, ...rest: unknown[]): void {
    this.emit('info', message, rest);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.emit('error', message, rest);
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.emit('warn', message, rest);
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.emit('debug', message, rest);
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.emit('debug', message, rest);
  }

  private emit(level: LogLevel, message: unknown, rest: unknown[]): void {
    if (RANK[level] > RANK[this.level]) return;
    // Nest passes the context name last, and a stack before it for errors.
    const context = typeof rest[rest.length - 1] === 'string' ? rest.pop() : undefined;
    const entry: Record<string, unknown> = {
      time: new Date().toISOString(),
      level,
      context,
      request_id: requestContext.getStore()?.requestId,
    };
    if (message instanceof Error) {
      entry.msg = message.message;
      entry.stack = message.stack;
    } else if (typeof message === 'object' && message !== null) {
      Object.assign(entry, message);
    } else {
      entry.msg = String(message);
    }
    if (typeof rest[0] === 'string' && level === 'error') entry.stack = rest[0];
    this.write(JSON.stringify(entry));
  }
}
