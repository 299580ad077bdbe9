/**
 * Hostile input over every endpoint, generated with fast-check: whatever comes in, the
 * answer is never a 5xx, every 4xx carries Blazar's error body, and a refused request
 * leaves every table as it was.
 *
 * Reproduce a run with FUZZ_SEED=<n> (the default is fixed); FUZZ_SCALE=<k> multiplies the
 * number of requests. fast-check prints the failing request (shrunk) and its seed.
 */
import fc from 'fast-check';
import type { Client } from 'pg';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';
import { startApp, TestApp } from './support/app.js';
import { addHosts } from './support/hosts.js';

const SEED = process.env.FUZZ_SEED === undefined ? 20_251_130 : Number(process.env.FUZZ_SEED);
const SCALE = Number(process.env.FUZZ_SCALE ?? 1);

const ADMIN = { 'X-Project-Id': 'admin', 'X-User-Id': 'admin', 'X-Roles': 'admin' };
const TENANT = { 'X-Project-Id': 'tenant', 'X-User-Id': 'tenant-u', 'X-Roles': 'member' };
const OTHER = { 'X-Project-Id': 'other', 'X-User-Id': 'other-u', 'X-Roles': 'member' };

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** One HTTP request as sent: the path is already percent-encoded, the body raw text. */
interface Req {
  method: Method;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** A JSON fragment written as is: numbers JSON.parse turns into Infinity, deep nesting. */
class Raw {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** A key left out of a generated object. */
const ABSENT = Symbol('absent');

function toJson(value: unknown): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(
      ([, v]) => v !== ABSENT,
    );
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * encodeURIComponent, but a lone surrogate goes out as its (invalid) CESU-8 bytes. Only
 * the first 300 characters, to keep request lines under Node's 16 KB (see headBytes).
 */
function enc(text: string): string {
  let out = '';
  for (const ch of text.slice(0, 300)) {
    const c = ch.codePointAt(0) as number;
    out += c >= 0xd800 && c <= 0xdfff ? '%ED%A0%80' : encodeURIComponent(ch);
  }
  return out;
}

// ---------------------------------------------------------------- hostile values

const ODD_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u0000'.repeat(3),
  '\u0001\u0002\u001f\u007f',
  '\t\r\n',
  '\ud800',
  'x\udfff',
  '\ud83d',
  '\u202e\u202d',
  '\ufeff',
  '\uffff\ufffe',
  '\u2028\u2029',
  '😀',
  'a\ufe0f'.repeat(200),
  '\u00e9'.repeat(256),
  '%00',
  '%',
  '../../etc/passwd',
  "'; DROP TABLE leases; --",
  '$gpu',
  '${x}',
  'now',
  'NOW',
  'null',
  'None',
  'True',
  'undefined',
  'NaN',
  'Infinity',
  '-Infinity',
  '1e400',
  '1e308',
  '9223372036854775808',
  '-1',
  '0.5',
  '0x10',
  ' 2 ',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
];

const BAD_DATES = [
  '2040-13-01 00:00',
  '2040-02-30 10:00',
  '2040-1-1 9:5',
  '0000-01-01 00:00',
  '9999-12-31 23:59',
  '275760-09-13 00:00',
  '2040-01-01T00:00:00Z',
  '2040-01-01T00:00:00+99:99',
  '2040-01-01T00:00:00.9999999999Z',
  '2040-01-01 24:00',
  '1970-01-01 00:00',
  '2040-01-01 00:00\u0000',
  'yesterday',
  '2040-01-01',
  '-2040-01-01 00:00',
];

const longString = fc
  .tuple(
    fc.constantFrom(256, 257, 300, 1024, 5000),
    fc.constantFrom('a', '\u00e9', '\u0000', '😀', 'a\ufe0f', '\ud800'),
  )
  .map(([n, c]) => c.repeat(n));

const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...ODD_STRINGS) },
  { weight: 1, arbitrary: fc.constantFrom(...BAD_DATES) },
  { weight: 2, arbitrary: longString },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }) },
  {
    weight: 2,
    arbitrary: fc.string({
      unit: fc.constantFrom(
        '\u0000',
        '\u0001',
        'a',
        '\u00ff',
        '\ud800',
        '\udc00',
        '\ufe0f',
        '\u2028',
        '$',
        '"',
        '\\',
        ' ',
      ),
      maxLength: 16,
    }),
  },
);

const hostileNumber: fc.Arbitrary<unknown> = fc.constantFrom<unknown>(
  2 ** 63,
  2 ** 64,
  1e308,
  -1e308,
  -1,
  0,
  -0,
  0.5,
  1.5,
  2 ** 31,
  2 ** 31 - 1,
  2 ** 32,
  2 ** 53 + 2,
  Number.MAX_SAFE_INTEGER,
  1e-300,
  new Raw('1e400'),
  new Raw('-1e400'),
  new Raw('123456789012345678901234567890'),
  new Raw('1E2'),
  new Raw('-0.0'),
  '9223372036854775808',
  '1e308',
  '1e400',
  '-1',
  '0.5',
  ' 1',
  '0x10',
);

const hostileKey: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'valueOf',
    '',
    ' ',
    'k'.repeat(65),
    'k'.repeat(300),
    'x\u0000',
    '\ud800',
    'a.b',
    'a b',
    'name',
    'id',
    'min',
    'max',
    'reservable',
    'resource_type',
    'zone',
    'rack',
  ),
  fc.string({ maxLength: 8 }),
);

const deepJson = fc
  .tuple(fc.constantFrom(33, 64, 2_000), fc.boolean())
  .map(([n, list]) =>
    list
      ? new Raw('['.repeat(n) + ']'.repeat(n))
      : new Raw('{"a":'.repeat(n) + '0' + '}'.repeat(n)),
  );

const { value: hostileValue } = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 5, arbitrary: hostileString },
    { weight: 3, arbitrary: hostileNumber },
    { weight: 2, arbitrary: fc.constantFrom<unknown>(null, true, false, [], {}) },
    { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 3 }) },
    {
      weight: 1,
      arbitrary: fc
        .array(fc.tuple(hostileKey, tie('value')), { maxLength: 3 })
        .map((entries) => Object.fromEntries(entries)),
    },
    { weight: 1, arbitrary: deepJson },
  ),
}));

/** Mostly the valid value, sometimes a hostile one. */
const field = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 8, arbitrary: valid }, { weight: 1, arbitrary: hostileValue });

/** Often absent, else as `field`. */
const optional = <T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 1, arbitrary: fc.constant(ABSENT) }, { weight: 1, arbitrary: field(valid) });

/** A record of fields plus, sometimes, unknown keys (`__proto__` among them). */
function shape(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  return fc
    .tuple(
      fc.record(fields),
      fc.array(fc.tuple(hostileKey, hostileValue), { maxLength: 2 }),
      fc.nat(9),
    )
    .map(([known, extra, roll]) =>
      roll < 7 ? known : Object.fromEntries([...Object.entries(known), ...extra]),
    );
}

// ---------------------------------------------------------------- requests

const headerText = (max: number) =>
  fc.string({
    unit: fc.constantFrom('a', 'Z', '0', ' ', '\t', '\u00e9', '\u00ff', '"', ',', '*', '-', ':'),
    maxLength: max,
  });

const hostileHeader = fc.oneof(
  headerText(20),
  fc.constantFrom(256, 300, 2000, 4000).map((n) => 'p'.repeat(n)),
);

const identity: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 8, arbitrary: fc.constantFrom(ADMIN, TENANT, OTHER, {}) },
  {
    weight: 1,
    arbitrary: fc.record({
      'X-Project-Id': fc.oneof(fc.constant('tenant'), hostileHeader),
      'X-User-Id': fc.oneof(fc.constant('u'), hostileHeader),
      'X-Roles': fc.oneof(
        fc.constantFrom('admin', 'member', '', ',,', 'admin,member'),
        hostileHeader,
      ),
    }),
  },
);

const oddHeaders: fc.Arbitrary<Record<string, string>> = fc
  .record(
    {
      'Idempotency-Key': fc.oneof(fc.constantFrom('k1', 'k2'), hostileHeader),
      'If-Match': fc.oneof(fc.constantFrom('"1"', '*', 'W/"2"', '"999"', ''), hostileHeader),
      'OpenStack-API-Version': fc.constantFrom(
        'reservation 1.0',
        'reservation latest',
        'reservation 1.1',
        'reservation abc',
        'reservation',
        'compute 2.1',
      ),
      'Content-Encoding': fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'zzz'),
      'X-OpenStack-Request-ID': fc.constantFrom(
        'req-x',
        'req-00000000-0000-0000-0000-000000000000',
      ),
    },
    { requiredKeys: [] },
  )
  .map((h) => h as Record<string, string>);

const extraHeaders = fc.oneof(
  { weight: 4, arbitrary: fc.constant<Record<string, string>>({}) },
  { weight: 1, arbitrary: oddHeaders },
);

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/json; charset=bogus',
  'APPLICATION/JSON',
  'application/json-patch+json',
  'application/jsonx',
  'text/plain',
  'application/xml',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
];

const MALFORMED_BODIES = [
  '{',
  '{"a":}',
  '[1,]',
  "{'a':1}",
  'nul',
  '\u0000',
  '   ',
  'null',
  '[]',
  '"str"',
  '123',
  'true',
  '{"name":"x"}{"name":"y"}',
  '\ufeff{}',
  '{"a":"\\ud800"}',
  '{"a":"\\u0000"}',
  '{"a\\u0000":1}',
  '{"__proto__":{"isAdmin":true}}',
  '{"constructor":{"prototype":{"x":1}}}',
  '{"name":1e400}',
  `{"x":"${'y'.repeat(120_000)}"}`,
];

/** The body as sent: usually the shape as JSON, sometimes broken text or a wrong type. */
function bodyOf(shapeArb: fc.Arbitrary<unknown>): fc.Arbitrary<{ text: string; type: string }> {
  return fc.oneof(
    { weight: 12, arbitrary: shapeArb.map((v) => ({ text: toJson(v), type: 'application/json' })) },
    {
      weight: 1,
      arbitrary: fc.record({
        text: fc.oneof(shapeArb.map(toJson), fc.constantFrom(...MALFORMED_BODIES)),
        type: fc.constantFrom(...CONTENT_TYPES),
      }),
    },
    {
      weight: 1,
      arbitrary: fc
        .constantFrom(...MALFORMED_BODIES)
        .map((text) => ({ text, type: 'application/json' })),
    },
  );
}

const RAW_SEGMENTS = [
  '%',
  '%ZZ',
  '%FF',
  '%C0%80',
  '%00',
  'a%00b',
  '%2e%2e',
  '%2F',
  '%20',
  '*',
  '%E2%80%AE',
  'x'.repeat(3000),
  '00000000-0000-0000-0000-000000000000',
  '0',
  '-1',
  '9223372036854775808',
  '1e400',
];

/** A path segment: a known id, a hostile string, or raw bad percent-encoding. */
const segment = (known: string[]): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...known).map(enc) },
    { weight: 2, arbitrary: hostileString.filter((s) => s !== '').map(enc) },
    { weight: 1, arbitrary: fc.constantFrom(...RAW_SEGMENTS) },
  );

const RAW_QUERY = [
  '%00',
  '=',
  '&&',
  'a[b]=1',
  'a[__proto__][x]=1',
  '__proto__=1',
  '%ZZ=%ZZ',
  '%FF',
];

/** A query string over the given keys (valid values or hostile ones, sometimes repeated). */
function queryOf(params: Record<string, fc.Arbitrary<string>>): fc.Arbitrary<string> {
  const entries = Object.entries(params).map(([key, valid]) =>
    fc
      .tuple(
        fc.oneof(
          { weight: 1, arbitrary: fc.constant(0) },
          { weight: 8, arbitrary: fc.constant(1) },
          { weight: 1, arbitrary: fc.constant(2) },
        ),
        fc.oneof({ weight: 6, arbitrary: valid }, { weight: 1, arbitrary: hostileString }),
      )
      .map(([times, value]) =>
        Array.from({ length: times }, () => `${key}=${enc(value)}`).join('&'),
      ),
  );
  return fc
    .tuple(
      fc.tuple(...entries),
      fc.oneof(
        { weight: 3, arbitrary: fc.constant<string[]>([]) },
        {
          weight: 1,
          arbitrary: fc.array(
            fc.oneof(
              fc.constantFrom(...RAW_QUERY),
              fc.tuple(hostileKey, hostileString).map(([k, v]) => `${enc(k)}=${enc(v)}`),
            ),
            { minLength: 1, maxLength: 2 },
          ),
        },
      ),
    )
    .map(([parts, junk]) => {
      const text = [...parts, ...junk].filter((p) => p !== '').join('&');
      return text === '' ? '' : `?${text}`;
    });
}

interface Endpoint {
  name: string;
  runs: number;
  request: fc.Arbitrary<Req>;
}

/** `body`: the shape a request carries; with `rarely`, a body the route does not read. */
function request(
  method: Method,
  path: fc.Arbitrary<string>,
  body?: fc.Arbitrary<unknown>,
  rarely = false,
): fc.Arbitrary<Req> {
  const sent =
    body === undefined
      ? fc.constant(undefined)
      : fc.oneof(
          { weight: rarely ? 3 : 1, arbitrary: fc.constant(undefined) },
          { weight: rarely ? 1 : 12, arbitrary: bodyOf(body) },
        );
  return fc
    .tuple(path, identity, extraHeaders, sent)
    .map(([p, who, extra, b]): Req => {
      const headers: Record<string, string> = { ...who, ...extra };
      if (b === undefined) return { method, path: p, headers };
      return {
        method,
        path: p,
        headers: { ...headers, 'Content-Type': b.type },
        body: b.text,
      };
    })
    .filter((r) => headBytes(r) < 14_000);
}

/** Node answers 431 itself, before any app code, past 16 KB of request line and headers. */
function headBytes(req: Req): number {
  const headers = Object.entries(req.headers).map(([k, v]) => k.length + v.length + 4);
  return req.path.length + headers.reduce((a, b) => a + b, 0);
}

// ---------------------------------------------------------------- the world

interface World {
  leases: string[];
  reservations: string[];
  hosts: string[];
  /** Hosts with allocations: deleting them is refused (409). */
  busyHosts: string[];
  hostNames: string[];
  properties: string[];
}

const FUTURE = ['2040-03-01 00:00', '2040-03-02 12:00', '2040-03-01T06:00:00+01:00'];
const LATER = ['2040-03-05 00:00', '2040-04-01 00:00', '2040-03-06T00:00:00Z'];
const REQUIREMENTS = [
  '',
  '[]',
  '["==", "$zone", "z1"]',
  '[">=", "$vcpus", "8"]',
  '["and", ["==", "$rack", "r1"], ["!=", "$gpu", "True"]]',
  '["in", "$zone", "z1", "z2"]',
  '["==", "$zone", "\\u0000"]',
  '["==", "$zone", "\\ud800"]',
  '["==", "$\\u0000", "x"]',
  '["==", "$nope", "1"]',
  '[">=", "$vcpus", "1e400"]',
  '[">=", "$memory_mb", "99999999999999999999999"]',
  '["<", "$vcpus", "-1"]',
  '["in", "$zone"]',
  '["==", "$zone"]',
  `${'["not", '.repeat(20)}["==", "$zone", "z1"]${']'.repeat(20)}`,
  '["==", "$zone", 1e400]',
  '["==", "$zone", {"a": 1}]',
];

function endpoints(w: World): Endpoint[] {
  const leaseId = segment(w.leases);
  const hostId = segment(w.hosts);
  const reservationId = segment(w.reservations);
  const date = (valid: string[]) => field(fc.constantFrom(...valid, 'now'));
  const requirement = field(fc.constantFrom(...REQUIREMENTS));
  const hostReservation = shape({
    resource_type: field(fc.constant('physical:host')),
    min: field(fc.constantFrom(1, 2, '1')),
    max: field(fc.constantFrom(1, 2, 3)),
    hypervisor_properties: requirement,
    resource_properties: requirement,
    before_end: optional(fc.constantFrom('default', 'snapshot', '')),
    on_end: optional(fc.constantFrom('release', 'recycle', 'shared')),
    affinity: optional(fc.constantFrom('rack', null)),
    anti_affinity: optional(fc.constantFrom('rack', null)),
    extra_projects: optional(fc.constantFrom<unknown>(['p1'], 'p1,p2', [], ['tenant'])),
  });
  const instanceReservation = shape({
    resource_type: field(fc.constant('virtual:instance')),
    vcpus: field(fc.constantFrom(1, 2)),
    memory_mb: field(fc.constantFrom(512, '1024')),
    disk_gb: field(fc.constantFrom(0, 10)),
    amount: field(fc.constantFrom(1, 2)),
    affinity: field(fc.constantFrom<unknown>(null, true, false, 'None', 'True')),
    resource_properties: requirement,
    resource_id: optional(fc.constantFrom('00000000-0000-0000-0000-000000000001')),
  });
  const reservation = fc.oneof(
    { weight: 3, arbitrary: hostReservation },
    { weight: 3, arbitrary: instanceReservation },
    { weight: 1, arbitrary: hostileValue },
  );
  const leaseCreate = shape({
    name: field(fc.constantFrom('fuzz', 'lease-x')),
    start_date: date(FUTURE),
    end_date: date(LATER),
    before_end_date: optional(fc.constantFrom('2040-03-04 00:00', null)),
    reservations: optional(fc.array(reservation, { maxLength: 2 })),
    events: optional(
      fc.constantFrom<unknown>([], null, [{ event_type: 'start_lease', time: '2040-03-01 00:00' }]),
    ),
  });
  const reservationChange = shape({
    id: field(fc.constantFrom(...w.reservations)),
    resource_type: optional(fc.constantFrom('physical:host', 'virtual:instance')),
    min: optional(fc.constantFrom(1, 2)),
    max: optional(fc.constantFrom(1, 2, 3)),
    amount: optional(fc.constantFrom(1, 2, 3)),
    vcpus: optional(fc.constantFrom(1, 2)),
    resource_properties: optional(fc.constantFrom(...REQUIREMENTS)),
    hypervisor_properties: optional(fc.constantFrom(...REQUIREMENTS)),
  });
  const leaseUpdate = shape({
    name: optional(fc.constantFrom('renamed')),
    start_date: optional(fc.constantFrom(...FUTURE, 'now')),
    end_date: optional(fc.constantFrom(...LATER)),
    before_end_date: optional(fc.constantFrom('2040-03-04 00:00')),
    reservations: optional(fc.array(reservationChange, { maxLength: 2 })),
  });
  const hostFields = {
    vcpus: optional(fc.constantFrom(8, '16', 0)),
    memory_mb: optional(fc.constantFrom(16384, '65536')),
    local_gb: optional(fc.constantFrom(100, '500')),
    hypervisor_type: optional(fc.constantFrom('QEMU')),
    hypervisor_version: optional(fc.constantFrom(2_011_000, '6000000')),
    cpu_info: optional(fc.constantFrom('{"arch": "x86_64"}', 'baremetal')),
    availability_zone: optional(fc.constantFrom('nova', 'az1')),
    service_name: optional(fc.constantFrom('compute-svc')),
    reservable: optional(fc.constantFrom<unknown>(true, false, 'true', 'False')),
    zone: optional(fc.constantFrom('z1', 'z2')),
    rack: optional(fc.constantFrom('r1', 'r2')),
    gpu: optional(fc.constantFrom('True', 'False')),
  };
  const leaseParams = fc.oneof(
    fc.constantFrom(
      '{"name": "boot", "start": "now", "end": "2040-03-01 00:00"}',
      '{"name": "boot\\u0000", "start": "now", "end": "2040-03-01 00:00"}',
      `{"name": "${'n'.repeat(300)}", "start": "now", "end": "2040-03-01 00:00"}`,
      '{"name": "boot", "start": "\\u0000", "end": "2040-03-01 00:00"}',
      '{"name": "boot", "start": "now"}',
      '{"name": "boot", "start": "now", "end": "2040-03-01 00:00", "x": 1}',
      'not json',
      '[1]',
    ),
    hostileValue,
  );
  const filterBody = shape({
    hosts: optional(fc.constantFrom<unknown>(w.hostNames, [w.hostNames[0]], 'h-1', [])),
    project_id: field(fc.constantFrom('tenant', 'other', 'admin')),
    user_id: optional(fc.constantFrom('u1')),
    instance_uuid: optional(fc.constantFrom('00000000-0000-0000-0000-0000000000aa', 'nope')),
    num_instances: optional(fc.constantFrom(1, 2)),
    hints: optional(
      shape({
        reservation: optional(fc.constantFrom(...w.reservations)),
        reserved: optional(fc.constantFrom<unknown>('True', true, 'false')),
        lease_params: optional(leaseParams),
      }),
    ),
    flavor_extra_specs: optional(
      shape({
        'aggregate_instance_extra_specs:reservation': field(fc.constantFrom(...w.reservations)),
      }),
    ),
  });
  const path = (...parts: (string | fc.Arbitrary<string>)[]) =>
    fc
      .tuple(...parts.map((p) => (typeof p === 'string' ? fc.constant(p) : p)))
      .map((ps) => ps.join(''));
  const noQuery = fc.constant('');
  const anyQuery = queryOf({});
  const datesQuery = {
    start: fc.constantFrom(...FUTURE),
    end: fc.constantFrom(...LATER),
  };
  const anyBody = hostileValue;

  return [
    {
      name: 'GET /v1/leases',
      runs: 120,
      request: request(
        'get',
        path(
          '/v1/leases',
          queryOf({
            limit: fc.constantFrom('1', '10', '1000'),
            marker: fc.constantFrom(...w.leases),
            status: fc.constantFrom('PENDING', 'ACTIVE'),
            sort: fc.constantFrom('name', 'start_date:desc', 'created_at:asc'),
            project_id: fc.constantFrom('tenant', 'other'),
          }),
        ),
      ),
    },
    {
      name: 'POST /v1/leases',
      runs: 260,
      request: request('post', path('/v1/leases', noQuery), leaseCreate),
    },
    {
      name: 'GET /v1/leases/{id}',
      runs: 60,
      request: request('get', path('/v1/leases/', leaseId)),
    },
    {
      name: 'PUT /v1/leases/{id}',
      runs: 220,
      request: request('put', path('/v1/leases/', leaseId), leaseUpdate),
    },
    {
      name: 'DELETE /v1/leases/{id}',
      runs: 60,
      // Deletes a seeded lease only when If-Match does not match (412): the others stay.
      request: request('delete', path('/v1/leases/', leaseId), anyBody, true).map((r) =>
        w.leases.some((id) => r.path.endsWith(id))
          ? { ...r, headers: { ...r.headers, 'If-Match': '"999"' } }
          : r,
      ),
    },
    { name: 'GET /v1/os-hosts', runs: 40, request: request('get', path('/v1/os-hosts', anyQuery)) },
    {
      name: 'POST /v1/os-hosts',
      runs: 200,
      request: request(
        'post',
        path('/v1/os-hosts', noQuery),
        shape({ name: field(fc.constantFrom('fz-1', 'fz-2', 'fz-3')), ...hostFields }),
      ),
    },
    {
      name: 'GET /v1/os-hosts/{id}',
      runs: 50,
      request: request('get', path('/v1/os-hosts/', hostId)),
    },
    {
      name: 'PUT /v1/os-hosts/{id}',
      runs: 180,
      request: request('put', path('/v1/os-hosts/', hostId), shape(hostFields)),
    },
    {
      name: 'DELETE /v1/os-hosts/{id}',
      runs: 50,
      request: request('delete', path('/v1/os-hosts/', segment(w.busyHosts)), anyBody, true),
    },
    {
      name: 'GET /v1/os-hosts/properties',
      runs: 50,
      request: request(
        'get',
        path(
          '/v1/os-hosts/properties',
          queryOf({
            detail: fc.constantFrom('true', 'False', '1'),
            all: fc.constantFrom('true', '0'),
          }),
        ),
      ),
    },
    {
      name: 'PATCH /v1/os-hosts/properties/{name}',
      runs: 80,
      request: request(
        'patch',
        path('/v1/os-hosts/properties/', segment(w.properties)),
        shape({ private: field(fc.constantFrom<unknown>(true, false, 'true')) }),
      ),
    },
    {
      name: 'GET /v1/os-hosts/allocations',
      runs: 80,
      request: request(
        'get',
        path(
          '/v1/os-hosts/allocations',
          queryOf({
            lease_id: fc.constantFrom(...w.leases),
            reservation_id: fc.constantFrom(...w.reservations),
            ...datesQuery,
          }),
        ),
      ),
    },
    {
      name: 'GET /v1/os-hosts/{id}/allocation',
      runs: 60,
      request: request(
        'get',
        path(
          '/v1/os-hosts/',
          hostId,
          '/allocation',
          queryOf({ lease_id: fc.constantFrom(...w.leases) }),
        ),
      ),
    },
    {
      name: 'GET /v1/os-hosts/capacity',
      runs: 80,
      request: request(
        'get',
        path(
          '/v1/os-hosts/capacity',
          queryOf({
            ...datesQuery,
            step: fc.constantFrom('1d', '6h', '1d', '6h', '1m', '0', '-1h', '1e400h'),
            hypervisor_properties: fc.constantFrom(...REQUIREMENTS),
            resource_properties: fc.constantFrom(...REQUIREMENTS),
          }),
        ),
      ),
    },
    {
      name: 'GET /v1/os-hosts/availability',
      runs: 80,
      request: request(
        'get',
        path(
          '/v1/os-hosts/availability',
          queryOf({
            count: fc.constantFrom('1', '2', '100000'),
            duration: fc.constantFrom('1d', '2h', '1d', '2h', '0', '1e400d'),
            start: fc.constantFrom(...FUTURE),
            limit: fc.constantFrom('1', '100'),
            resource_properties: fc.constantFrom(...REQUIREMENTS),
          }),
        ),
      ),
    },
    {
      name: 'PUT /v1/os-hosts/{id}/pool',
      runs: 60,
      request: request(
        'put',
        path('/v1/os-hosts/', hostId, '/pool'),
        shape({ pool: field(fc.constantFrom('shared', 'freepool', 'recycle')) }),
      ),
    },
    {
      name: 'POST /v1/reservations/{id}/claims',
      runs: 120,
      request: request(
        'post',
        path('/v1/reservations/', reservationId, '/claims'),
        shape({
          server_id: field(fc.constantFrom('srv-a', 'srv-b')),
          host: optional(fc.constantFrom(...w.hostNames)),
        }),
      ),
    },
    {
      name: 'DELETE /v1/claims/{id}',
      runs: 40,
      // The seeded claim stays (it pins its host): only hostile ids here.
      request: request(
        'delete',
        path('/v1/claims/', hostileString.filter((s) => s !== '').map(enc)),
      ),
    },
    {
      name: 'POST /v1/scheduler/filter',
      runs: 200,
      request: request('post', path('/v1/scheduler/filter', noQuery), filterBody),
    },
    { name: 'GET /v1/pools', runs: 30, request: request('get', path('/v1/pools', anyQuery)) },
    {
      name: 'GET / and /versions',
      runs: 30,
      request: request(
        'get',
        path(fc.constantFrom('/', '/versions', '/versions.json', '/healthz'), anyQuery),
      ),
    },
    {
      name: 'any method on any path',
      runs: 120,
      request: fc
        .tuple(
          fc.constantFrom<Method>('get', 'post', 'put', 'patch', 'delete'),
          fc.constantFrom(
            '/v1/leases',
            '/v1/leases/',
            '/v1/os-hosts',
            '/v1/os-hosts/properties',
            '/v1/scheduler/filter',
            '/v1/pools',
            '/v1/claims/',
            '/v1/reservations/',
            '/v1/plugins',
            '/v2/leases',
            '/',
          ),
          segment([...w.leases, ...w.hosts, ...w.reservations]),
        )
        .chain(([method, base, id]) =>
          request(method, fc.constant(base.endsWith('/') ? base + id : base), anyBody),
        ),
    },
  ];
}

// ---------------------------------------------------------------- the checks

/** One md5 per table over all its rows: cheap at this size, exact about any change. */
async function fingerprintQuery(client: Client): Promise<string> {
  const { rows } = await client.query<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  return rows
    .map(
      ({ table_name: t }) =>
        `SELECT '${t}' AS t, md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS h FROM "${t}" x`,
    )
    .join(' UNION ALL ');
}

const FRAMEWORK_MESSAGE =
  /^(Content type '.*' isn't supported|API Version String .*|Version .* is not supported.*)$/s;

function describe4xx(res: { status: number; body: unknown }): string | null {
  const body = res.body as Record<string, unknown> | null;
  if (typeof body !== 'object' || body === null) return 'no JSON body';
  const message = body.error_message;
  if (typeof message !== 'string' || message === '') return 'no error_message';
  // Blazar's own framework errors (content type, microversion) use its generic body.
  if (body.error === res.status && FRAMEWORK_MESSAGE.test(message)) return null;
  if (body.error_code !== res.status) return `error_code is ${String(body.error_code)}`;
  if (body.error_name !== res.status) return `error_name is ${String(body.error_name)}`;
  if (typeof body.error_type !== 'string' || body.error_type === '') return 'no error_type';
  return null;
}

function shown(req: Req): string {
  const clip = (s: string) => (s.length > 300 ? `${s.slice(0, 300)}… (${s.length} chars)` : s);
  return JSON.stringify({
    method: req.method,
    path: clip(req.path),
    headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, clip(v)])),
    body: req.body === undefined ? undefined : clip(req.body),
  });
}

describe('hostile requests over every endpoint', () => {
  let db: TestDatabase;
  let t: TestApp;
  let client: Client;
  let fingerprintSql: string;
  let last: string;
  let world: World;
  let sent = 0;
  /** Status counts per endpoint, printed with FUZZ_STATS=1 (to see what a run reaches). */
  const stats = new Map<string, Map<number, number>>();

  async function fingerprint(): Promise<string> {
    const { rows } = await client.query<{ t: string; h: string }>(fingerprintSql);
    return rows.map((r) => `${r.t}:${r.h}`).join(',');
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    t = await startApp({
      databaseUrl: db.url,
      env: { PLUGINS: 'physical:host,virtual:instance', CPU_ALLOCATION_RATIO: '1' },
    });
    t.clock.set(new Date('2040-01-01T00:00:00Z'));
    const hostNames = ['h-1', 'h-2', 'h-3', 'h-4'];
    const hosts = await addHosts(t.http, hostNames, (_, i) => ({
      vcpus: 16,
      memory_mb: 65536,
      local_gb: 500,
      zone: i < 2 ? 'z1' : 'z2',
      rack: `r${(i % 2) + 1}`,
      gpu: i === 0 ? 'True' : 'False',
    }));
    const lease = async (headers: Record<string, string>, body: Record<string, unknown>) => {
      const res = await t.http.post('/v1/leases').set(headers).send(body);
      if (res.status !== 201) throw new Error(`seed lease: ${res.status} ${res.text}`);
      return res.body.lease as { id: string; reservations: { id: string }[] };
    };
    const hostLease = await lease(TENANT, {
      name: 'seed-host',
      start_date: '2040-02-01 00:00',
      end_date: '2040-02-02 00:00',
      reservations: [
        {
          resource_type: 'physical:host',
          min: 1,
          max: 1,
          hypervisor_properties: '',
          resource_properties: '["==", "$zone", "z1"]',
        },
      ],
    });
    const slotLease = await lease(TENANT, {
      name: 'seed-slots',
      start_date: 'now',
      end_date: '2040-01-10 00:00',
      reservations: [
        {
          resource_type: 'virtual:instance',
          vcpus: 2,
          memory_mb: 2048,
          disk_gb: 10,
          amount: 2,
          affinity: null,
          resource_properties: '["==", "$zone", "z2"]',
        },
      ],
    });
    const otherLease = await lease(OTHER, {
      name: 'seed-other',
      start_date: '2040-02-03 00:00',
      end_date: '2040-02-04 00:00',
      reservations: [
        {
          resource_type: 'physical:host',
          min: 1,
          max: 1,
          hypervisor_properties: '',
          resource_properties: '',
        },
      ],
    });
    await t.settle();
    const claim = await t.http
      .post(`/v1/reservations/${slotLease.reservations[0].id}/claims`)
      .set(TENANT)
      .send({ server_id: 'srv-seed' });
    if (claim.status !== 201) throw new Error(`seed claim: ${claim.status} ${claim.text}`);
    const allocations = (await t.http.get('/v1/os-hosts/allocations').expect(200)).body
      .allocations as { resource_id: string; reservations: unknown[] }[];
    world = {
      busyHosts: allocations.filter((a) => a.reservations.length > 0).map((a) => a.resource_id),
      leases: [hostLease.id, slotLease.id, otherLease.id],
      reservations: [hostLease, slotLease, otherLease].map((l) => l.reservations[0].id),
      hosts,
      hostNames,
      properties: ['zone', 'rack', 'gpu'],
    };
    client = await connect(db.url);
    fingerprintSql = await fingerprintQuery(client);
    last = await fingerprint();
  });

  afterAll(async () => {
    process.stdout.write(`fuzz: ${sent} requests, FUZZ_SEED=${SEED}\n`);
    if (process.env.FUZZ_STATS) {
      for (const [name, counts] of stats) {
        const shownCounts = [...counts].sort(([a], [b]) => a - b).map(([s, n]) => `${s}×${n}`);
        process.stdout.write(`  ${name}: ${shownCounts.join(' ')}\n`);
      }
    }
    await client?.end();
    await t?.close();
    await db?.drop();
  });

  async function check(endpoint: string, req: Req): Promise<void> {
    sent++;
    const before = last;
    let call = t.http[req.method](req.path);
    for (const [name, value] of Object.entries(req.headers)) call = call.set(name, value);
    const res = await (req.body === undefined ? call : call.send(req.body));
    const counts = stats.get(endpoint) ?? new Map<number, number>();
    stats.set(endpoint, counts.set(res.status, (counts.get(res.status) ?? 0) + 1));
    last = await fingerprint();
    const fail = (why: string) =>
      new Error(
        `${why}\n  request: ${shown(req)}\n  answer: ${res.status} ${res.text.slice(0, 500)}`,
      );
    if (res.status >= 500) throw fail('5xx');
    if (res.status >= 400) {
      const problem = describe4xx(res);
      if (problem !== null) throw fail(`4xx without Blazar's error body (${problem})`);
      if (last !== before) throw fail('a refused request changed the tables');
    }
  }

  // Built lazily: the arbitraries pick among the ids seeded in beforeAll.
  const NAMES = endpoints({
    leases: ['x'],
    reservations: ['x'],
    hosts: ['x'],
    busyHosts: ['x'],
    hostNames: ['x'],
    properties: ['x'],
  }).map((e) => e.name);

  it.each(NAMES.map((name, i) => [name, i] as const))(
    "should answer below 500, refuse in Blazar's body and change nothing when %s gets hostile input",
    async (name, index) => {
      const endpoint = endpoints(world).find((e) => e.name === name) as Endpoint;
      await fc.assert(
        fc.asyncProperty(endpoint.request, (req) => check(name, req)),
        { seed: SEED + index, numRuns: Math.ceil(endpoint.runs * SCALE) },
      );
    },
    120_000,
  );
});
