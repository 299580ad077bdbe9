import { ConfigError, type Config } from '../config/config.js';
import { listenProblem } from '../config/listen-problem.js';
import { SettingError } from '../config/setting-error.js';
import { DataDirLocked } from './data-dir-lock.js';

interface SystemError {
  code?: unknown;
  message?: unknown;
  stack?: unknown;
}

/** Where DATABASE_URL points, without its user or password. */
export function databaseTarget(config: Pick<Config, 'databaseUrl' | 'dataDir'>): string {
  if (config.databaseUrl === null) return `the embedded database in ${config.dataDir}`;
  const url = new URL(config.databaseUrl);
  const port = url.port === '' ? '5432' : url.port;
  return `PostgreSQL at ${url.hostname}:${port}${url.pathname}`;
}

const DATABASE_CODES: Record<string, string> = {
  ECONNREFUSED: 'nothing listens there',
  ENOTFOUND: 'the host name does not resolve',
  ETIMEDOUT: 'the connection timed out',
  '28P01': 'the password was refused',
  '28000': 'the user may not connect',
  '3D000': 'the database does not exist',
};

/** What node-postgres says when a connection fails without a code. */
const PG_CONNECT_MESSAGES = /timeout exceeded when trying to connect|Connection terminated/;

/**
 * The one message an operator sees when Climate cannot start: the setting to fix and why,
 * never a stack trace for a setting. Only an unforeseen error keeps its stack.
 */
export function explainStartupError(error: unknown, config: Config | null): string {
  if (
    error instanceof ConfigError ||
    error instanceof DataDirLocked ||
    error instanceof SettingError
  ) {
    return error.message;
  }
  const e = (typeof error === 'object' && error !== null ? error : {}) as SystemError;
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : String(error);
  const why = listenProblem(code);
  if (config !== null && why !== null && /listen/.test(message)) {
    return `PORT=${config.port} (HOST=${config.host}): ${why}; pick another PORT.`;
  }
  const pgConnect = /^08|^57P03/.test(code) || PG_CONNECT_MESSAGES.test(message);
  if (config !== null && (code in DATABASE_CODES || pgConnect)) {
    const reason = DATABASE_CODES[code] ?? message;
    const setting = config.databaseUrl === null ? 'DATA_DIR' : 'DATABASE_URL';
    return `${setting}: cannot open ${databaseTarget(config)}: ${reason}.`;
  }
  const stack = typeof e.stack === 'string' ? e.stack : message;
  return `Climate could not start: ${stack}`;
}
