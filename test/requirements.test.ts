import type { Client } from 'pg';
import { compileRequirements, parseRequirements } from '../src/requirements/requirements.js';
import { connect, createTestDatabase, type TestDatabase } from './support/database.js';

const INJECTED_KEY = `x'); DROP TABLE h; --`;

const HOSTS: [string, number, number, string, boolean, Record<string, string> | null][] = [
  ['a', 4, 8192, 'QEMU', true, { gpu: 'True', cores: '9', rack: 'r1' }],
  ['b', 16, 32768, 'QEMU', true, { gpu: 'False', cores: '10', rack: 'r2' }],
  ['c', 32, 65536, 'KVM', false, { gpu: 'True', cores: 'abc', rack: 'r1' }],
  ['d', 8, 16384, 'KVM', true, {}],
  ['e', 2, 2048, 'ironic', true, null],
  ['f', 64, 131072, 'QEMU', true, { gpu: 'true', cores: '10.0', rack: 'r2', note: `it's "q"` }],
];

describe('requirements evaluated by PostgreSQL', () => {
  let db: TestDatabase;
  let client: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = await connect(db.url);
    await client.query(`CREATE TABLE h (name text, vcpus int, memory_mb int,
      hypervisor_type text, reservable boolean, capabilities jsonb)`);
    for (const [name, vcpus, memory, type, reservable, caps] of HOSTS) {
      await client.query(`INSERT INTO h VALUES ($1, $2, $3, $4, $5, $6::jsonb)`, [
        name,
        vcpus,
        memory,
        type,
        reservable,
        caps === null ? null : JSON.stringify(caps),
      ]);
    }
  });

  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  async function names(query: unknown): Promise<string[]> {
    const params: unknown[] = [];
    const where = compileRequirements(parseRequirements(query), {
      columns: {
        vcpus: { sql: 'h.vcpus', type: 'number' },
        memory_mb: { sql: 'h.memory_mb', type: 'number' },
        hypervisor_type: { sql: 'h.hypervisor_type', type: 'text' },
        reservable: { sql: 'h.reservable', type: 'boolean' },
      },
      capabilities: 'h.capabilities',
      knownProperties: new Set(['gpu', 'cores', 'rack', 'note', INJECTED_KEY]),
      params,
    });
    const { rows } = await client.query<{ name: string }>(
      `SELECT name FROM h WHERE ${where} ORDER BY name`,
      params,
    );
    return rows.map((r) => r.name);
  }

  it.each<[string, unknown, string[]]>([
    ['no constraint', '', ['a', 'b', 'c', 'd', 'e', 'f']],
    ['a number column', '[">=", "$vcpus", "16"]', ['b', 'c', 'f']],
    ['a decimal against an int column', '[">", "$vcpus", "2.5"]', ['a', 'b', 'c', 'd', 'f']],
    ['a value past int range', '["<", "$vcpus", "99999999999"]', ['a', 'b', 'c', 'd', 'e', 'f']],
    ['a JSON number', ['>=', '$memory_mb', 32768], ['b', 'c', 'f']],
    ['"10" > "9" as numbers', '[">", "$cores", "9"]', ['b', 'f']],
    ['numeric equality of "10" and "10.0"', '["==", "$cores", "10"]', ['b', 'f']],
    ['a numeric "<"', '["<", "$cores", "10"]', ['a']],
    ['"!=" on numbers, non-numeric matching', '["!=", "$cores", "9"]', ['b', 'c', 'f']],
    ['a text capability value', '["==", "$cores", "abc"]', ['c']],
    ['string equality', '["==", "$gpu", "True"]', ['a', 'c']],
    ['"!=" skipping hosts without it', '["!=", "$gpu", "True"]', ['b', 'f']],
    ['text ordering', '[">", "$rack", "r1"]', ['b', 'f']],
    ['a text column', '["==", "$hypervisor_type", "KVM"]', ['c', 'd']],
    ['a boolean column', '["==", "$reservable", "false"]', ['c']],
    ['a boolean column given "1"', '["=", "$reservable", "1"]', ['a', 'b', 'd', 'e', 'f']],
    ['"in" on a capability', '["in", "$rack", "r2", "r3"]', ['b', 'f']],
    ['"in" mixing numbers and text', '["in", "$cores", ["10", "abc"]]', ['b', 'c', 'f']],
    ['"in" on a number column', '["in", "$vcpus", "4", "8"]', ['a', 'd']],
    ['"in" on a text column', '["in", "$hypervisor_type", "QEMU", "ironic"]', ['a', 'b', 'e', 'f']],
    ['"or"', '["or", ["==", "$rack", "r2"], ["<", "$vcpus", "5"]]', ['a', 'b', 'e', 'f']],
    ['"not" with missing capabilities', '["not", ["==", "$gpu", "True"]]', ['b', 'd', 'e', 'f']],
    ['"not" of "!="', '["not", ["!=", "$cores", "9"]]', ['a', 'd', 'e']],
    ['a double "not"', '["not", ["not", ["==", "$gpu", "True"]]]', ['a', 'c']],
    [
      '"and" with "not"',
      '["and", ["==", "$gpu", "True"], ["not", ["==", "$reservable", "false"]]]',
      ['a'],
    ],
    [
      '"or" of "and" and "in"',
      '["or", ["and", ["==", "$rack", "r1"], [">", "$vcpus", "10"]], ["in", "$cores", "10"]]',
      ['b', 'c', 'f'],
    ],
    [
      '"and" of "not in" and "or"',
      '["and", ["not", ["in", "$rack", "r1"]], ["or", [">=", "$cores", "10"], ["==", "$hypervisor_type", "ironic"]]]',
      ['b', 'e', 'f'],
    ],
    ['a value with quotes', ['==', '$note', `it's "q"`], ['f']],
    ['a value trying to inject', `["==", "$rack", "r1' OR '1'='1"]`, []],
    ['a value trying to drop', `["!=", "$rack", "'; DROP TABLE h; --"]`, ['a', 'b', 'c', 'f']],
    ['a property name trying to inject', ['==', `$${INJECTED_KEY}`, 'x'], []],
    [
      '"not" of an injection',
      ['not', ['==', `$${INJECTED_KEY}`, 'x']],
      ['a', 'b', 'c', 'd', 'e', 'f'],
    ],
  ])('should select the right hosts when given %s', async (_, query, expected) => {
    expect(await names(query)).toEqual(expected);
  });

  it('should leave the table intact when given values that try to inject', async () => {
    await names(`["==", "$rack", "'; DROP TABLE h; --"]`);
    const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM h');
    expect(rows[0].n).toBe('6');
  });
});
