/** Checks of settings that need more than a type: each problem found is pushed onto `problems`. */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { readTokensFile } from './tokens-file.js';

export function checkPlugins(
  enabled: string[],
  known: readonly string[],
  problems: string[],
): void {
  const seen = new Set<string>();
  for (const type of enabled) {
    if (!known.includes(type)) {
      problems.push(
        `PLUGINS=${enabled.join(',')}: ${type} is not a resource type (use ${known.join(', ')})`,
      );
    } else if (seen.has(type)) {
      problems.push(`PLUGINS=${enabled.join(',')}: ${type} is listed twice`);
    }
    seen.add(type);
  }
}

/** The URL's scheme with its colon ('https:'), or '' when it does not parse. */
function protocolOf(url: string): string {
  try {
    return new URL(url).protocol;
  } catch {
    return '';
  }
}

export function checkServiceUrl(name: string, url: string | null, problems: string[]): void {
  if (url === null) return;
  const protocol = protocolOf(url);
  if (protocol !== 'http:' && protocol !== 'https:') {
    problems.push(`${name}=${url}: must be an http:// or https:// URL`);
  }
}

/** The tokens file is read now, so a missing or malformed one stops the start cleanly. */
export function checkTokensFile(path: string, problems: string[]): void {
  try {
    readTokensFile(path);
  } catch (error) {
    const cause = (error as Error).cause as { message?: unknown } | undefined;
    const detail = typeof cause?.message === 'string' ? ` (${cause.message})` : '';
    problems.push(`${(error as Error).message}${detail}`);
  }
}

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** Each entry an address, a CIDR range or one of express's names for a range. */
export function checkTrustProxy(entries: string[], problems: string[]): void {
  for (const entry of entries) {
    const [address, bits, extra] = entry.split('/');
    const version = isIPv4(address) ? 4 : isIPv6(address) ? 6 : 0;
    const maxBits = version === 4 ? 32 : 128;
    const validBits = bits === undefined || (/^\d+$/.test(bits) && Number(bits) <= maxBits);
    if (PROXY_NAMES.includes(entry) || (version !== 0 && validBits && extra === undefined))
      continue;
    problems.push(
      `TRUST_PROXY=${entries.join(',')}: ${entry} is not an address, a CIDR range or one of ` +
        PROXY_NAMES.join(', '),
    );
  }
}

export function checkBroker(
  prefix: string,
  broker: { url: string | null; topics: string[] },
  defaultTopic: string,
  problems: string[],
  protocols = ['amqp:', 'amqps:'],
): void {
  if (broker.url !== null) {
    if (!protocols.includes(protocolOf(broker.url))) {
      const names = protocols.map((p) => `${p}//`).join(', ');
      problems.push(`${prefix}_URL: must be an ${names.replace(/, ([^,]*)$/, ' or $1')} URL`);
    }
  }
  if (broker.topics.length === 0) {
    problems.push(`${prefix}_TOPICS: name at least one topic (default ${defaultTopic})`);
  }
}

export function checkDatabaseUrl(url: string | null, problems: string[]): void {
  if (url === null) return;
  try {
    const parsed = new URL(url);
    if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
      problems.push(`DATABASE_URL: must start with postgres:// or postgresql://`);
    }
  } catch {
    problems.push(`DATABASE_URL: not a valid URL`);
  }
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** 127.0.0.0/8, ::1 (IPv4-mapped forms too) and localhost. */
export function isLoopback(host: string): boolean {
  if (host.toLowerCase() === 'localhost') return true;
  if (isIPv4(host)) return LOOPBACK.check(host, 'ipv4');
  return isIPv6(host) && LOOPBACK.check(host, 'ipv6');
}

/**
 * FREEPOOL_NAME names a Nova aggregate (at most 255 characters) that no other pool of
 * Climate's may take: not `shared` or `recycle`, and not a reservation id (a uuid).
 * AZ_PREFIX starts availability zone names: a few safe characters.
 */
export function checkPoolNames(freepool: string, azPrefix: string, problems: string[]): void {
  const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  if (
    freepool.trim() !== freepool ||
    freepool.length === 0 ||
    freepool.length > 255 ||
    ['shared', 'recycle'].includes(freepool) ||
    uuid.test(freepool)
  ) {
    problems.push(
      `FREEPOOL_NAME=${freepool}: a Nova aggregate name of 1 to 255 characters without ` +
        'leading or trailing spaces, other than shared, recycle or a uuid',
    );
  }
  if (!/^[A-Za-z0-9_:.-]{1,64}$/.test(azPrefix)) {
    problems.push(`AZ_PREFIX=${azPrefix}: 1 to 64 letters, digits or _:.- (Blazar's blazar_)`);
  }
}
