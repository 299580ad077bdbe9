import type { Client } from 'pg';
import { compileRequirements, parseRequirements } from '../src/pools/requirements.js';
import { connect, createTestDatabase, TestDatabase } from './support/database.js';

describe('requirements evaluated by PostgreSQL', () => {
  let db: TestDatabase;
  let client: Client;

  beforeAll(async () => {
    db = await createTestDatabase();
    client = await connect(db.url);
    await client.query(
      `CREATE TABLE h (name text, vcpus int, hypervisor_type text, reservable boolean, caps jsonb)`,
    );
    await client.query(`INSERT INTO h VALUES
      ('a', 4,  'QEMU', true,  '{"cores": "9",   "gpu": "True",  "rack": "r1"}'),
      ('b', 16, 'QEMU', true,  '{"cores": "10",  "gpu": "False", "rack": "r2"}'),
      ('c', 32, 'KVM',  false, '{"cores": "abc", "gpu": "True",  "rack": "r1"}'),
      ('d', 8,  'KVM',  true,  '{}')`);
  });
  afterAll(async () => {
    await client?.end();
    await db?.drop();
  });

  async function names(query: string): Promise<string[]> {
    const params: unknown[] = [];
    const where = compileRequirements(parseRequirements(query), {
      columns: {
        vcpus: { sql: 'h.vcpus', type: 'number' },
        hypervisor_type: { sql: 'h.hypervisor_type', type: 'text' },
        reservable: { sql: 'h.reservable', type: 'boolean' },
      },
      capabilities: 'h.caps',
      knownProperties: new Set(['cores', 'gpu', 'rack']),
      params,
    });
    const { rows } = await client.query(`SELECT name FROM h WHERE ${where} ORDER BY name`, params);
    return rows.map((r) => r.name as string);
  }

  it.each([
    ['', ['a', 'b', 'c', 'd']],
    ['[">=", "$vcpus", "16"]', ['b', 'c']],
    ['[">", "$cores", "9"]', ['b']],
    ['["<=", "$cores", "10"]', ['a', 'b']],
    ['["!=", "$cores", "9"]', ['b', 'c']],
    ['["==", "$gpu", "True"]', ['a', 'c']],
    ['["==", "$hypervisor_type", "KVM"]', ['c', 'd']],
    ['["==", "$reservable", "false"]', ['c']],
    ['["in", "$rack", "r2", "r3"]', ['b']],
    ['["in", "$vcpus", "4", "8"]', ['a', 'd']],
    ['["or", ["==", "$rack", "r2"], ["<", "$vcpus", "5"]]', ['a', 'b']],
    ['["not", ["==", "$gpu", "True"]]', ['b', 'd']],
    ['["and", ["==", "$gpu", "True"], ["not", ["==", "$reservable", "false"]]]', ['a']],
    [
      '["or", ["and", ["==", "$rack", "r1"], [">", "$vcpus", "10"]], ["in", "$cores", "10"]]',
      ['b', 'c'],
    ],
    [`["==", "$rack", "r1' OR '1'='1"]`, []],
  ])('should select the right hosts for %s', async (query, expected) => {
    expect(await names(query)).toEqual(expected);
  });
});
