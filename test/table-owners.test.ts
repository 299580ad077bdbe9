import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

const ROOT = join(__dirname, '..');
const SRC = join(ROOT, 'src');
const MIGRATIONS = join(SRC, 'database', 'migrations');

/** The one file that assembles the create's statement from the owners' fragments. */
const COMPOSER = 'src/leases/lease-creator.ts';

/**
 * Each table's owner (a file, with its parts named `<owner>-<part>.ts` if it is split, or a
 * plugin's folder ending in `/`) and at most one read
 * model that joins it; docs/development.md ("Who owns each table") says what each owns.
 */
const OWNERS: Record<string, { owner: string; readModel?: string }> = {
  leases: { owner: 'src/model/lease-tables.ts', readModel: 'src/pools/host-usage.ts' },
  reservations: { owner: 'src/model/lease-tables.ts', readModel: 'src/pools/host-usage.ts' },
  events: { owner: 'src/model/lease-tables.ts' },
  idempotency_keys: { owner: 'src/leases/idempotency.ts' },
  hosts: {
    owner: 'src/pools/hosts.repository.ts',
    readModel: 'src/scheduler/pool-verdicts.repository.ts',
  },
  aggregates: {
    owner: 'src/pools/pools.repository.ts',
    readModel: 'src/scheduler/pool-verdicts.repository.ts',
  },
  aggregate_hosts: {
    owner: 'src/pools/pools.repository.ts',
    readModel: 'src/scheduler/pool-verdicts.repository.ts',
  },
  resource_properties: {
    owner: 'src/hosts/host-properties.service.ts',
    readModel: 'src/requirements/host-query.ts',
  },
  host_busy: { owner: 'src/pools/host-busy.ts', readModel: 'src/pools/capacity-plan.ts' },
  host_busy_changes: { owner: 'src/pools/host-busy.ts' },
  // The counts the capacity plan and availability read without a requirement.
  host_busy_counts: { owner: 'src/pools/host-busy.ts' },
  host_busy_hosts: { owner: 'src/pools/host-busy.ts' },
  host_busy_totals: { owner: 'src/pools/host-busy.ts' },
  placement_weights: { owner: 'src/pools/placement-weights.ts' },
  host_allocations: {
    owner: 'src/plugins/physical-host/',
    readModel: 'src/pools/host-usage.ts',
  },
  instance_allocations: {
    owner: 'src/plugins/virtual-instance/',
    readModel: 'src/pools/host-usage.ts',
  },
  claims: { owner: 'src/plugins/virtual-instance/', readModel: 'src/pools/host-usage.ts' },
  floatingips: { owner: 'src/plugins/virtual-floatingip/' },
  floatingip_allocations: { owner: 'src/plugins/virtual-floatingip/' },
  host_power: { owner: 'src/power/power.repository.ts', readModel: 'src/pools/power-readiness.ts' },
  power_log: { owner: 'src/power/power.repository.ts' },
  // The power plan as it is kept (PowerPlanStore migration): its store and the pages.
  power_plan: { owner: 'src/power/plan-store.ts', readModel: 'src/power/plan-pages.ts' },
  power_plan_changes: { owner: 'src/power/plan-store.ts' },
  power_plan_settings: { owner: 'src/power/plan-store.ts' },
  power_state_counts: { owner: 'src/power/plan-store.ts' },
  power_sums: { owner: 'src/power/plan-store.ts' },
  notification_outbox: {
    owner: 'src/notifications/notification-outbox.ts',
    readModel: 'src/observability/metrics.service.ts',
  },
  webhook_receivers: { owner: 'src/notifications/webhook-store.ts' },
  webhook_deliveries: { owner: 'src/notifications/notification-outbox.ts' },
  lease_counts: { owner: 'src/observability/gauge-counts.ts' },
  pool_host_counts: { owner: 'src/observability/gauge-counts.ts' },
  pool_state: { owner: 'src/scheduler/scheduler-filter.service.ts' },
  // The pool version's shards, bumped by triggers; pool_state is a view of their sum.
  pool_state_shards: { owner: 'src/scheduler/scheduler-filter.service.ts' },
};

/** Every .ts file under a folder. */
function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** Tables the migrations create. */
function migratedTables(): string[] {
  const names = files(MIGRATIONS).flatMap((file) =>
    [
      ...readFileSync(file, 'utf8').matchAll(
        /CREATE\s+(?:UNLOGGED\s+)?TABLE\s+(?:IF NOT EXISTS\s+)?"?(\w+)/gi,
      ),
    ].map((m) => m[1]),
  );
  return [...new Set(names)].sort();
}

/** The source without comment lines (a comment may quote SQL it does not run). */
function code(text: string): string {
  return text
    .split('\n')
    .filter((line) => !/^\s*(\/\/|\/\*|\*)/.test(line))
    .join('\n');
}

/**
 * Whether `text` names `table` in SQL: after FROM, JOIN, INTO, UPDATE, TABLE or USING
 * (across line breaks), or second in a FROM list. A CTE of the same name defined in the
 * text is not the table.
 */
export function namesTable(text: string, table: string): boolean {
  const cte = new RegExp(`\\b${table}\\s+AS\\s+(MATERIALIZED\\s+)?\\(`);
  if (cte.test(text)) return false;
  const after = new RegExp(`\\b(FROM|JOIN|INTO|UPDATE|TABLE|USING)\\s+(ONLY\\s+)?"?${table}\\b`);
  const listed = new RegExp(`\\bFROM\\s+\\w+(\\s+(AS\\s+)?[a-z]\\w*)?\\s*,\\s*"?${table}\\b`);
  return after.test(text) || listed.test(text);
}

/**
 * Files whose SQL runs against another database: the import benchmark writes a generated
 * Blazar database (its own leases, reservations, events and resource_properties).
 */
const OTHER_DATABASES = ['src/import/bench.ts'];

/** src/ files under the rule: migrations and specs are outside it. */
function ruled(): { path: string; text: string }[] {
  return files(SRC)
    .filter((f) => !f.startsWith(MIGRATIONS) && !f.endsWith('.spec.ts'))
    .filter((f) => !OTHER_DATABASES.includes(relative(ROOT, f).split(sep).join('/')))
    .map((f) => ({
      path: relative(ROOT, f).split(sep).join('/'),
      text: code(readFileSync(f, 'utf8')),
    }));
}

function allowed(table: string, path: string): boolean {
  const { owner, readModel } = OWNERS[table];
  const owns = owner.endsWith('/')
    ? path.startsWith(owner)
    : path === owner || path.startsWith(owner.replace(/\.ts$/, '-'));
  return owns || path === COMPOSER || path === readModel;
}

describe('one owner per table', () => {
  const sources = ruled();

  it('should give every table of the migrations an owner', () => {
    const tables = migratedTables();
    expect(tables.filter((t) => OWNERS[t] === undefined)).toEqual([]);
    expect(Object.keys(OWNERS).filter((t) => !tables.includes(t))).toEqual([]);
  });

  it('should name each table in SQL only in its owner, the composer and its read model', () => {
    const outside: string[] = [];
    for (const table of Object.keys(OWNERS)) {
      for (const { path, text } of sources) {
        const pair = `${table} ${path}`;
        if (namesTable(text, table) && !allowed(table, path)) {
          outside.push(pair);
        }
      }
    }
    expect(outside).toEqual([]);
  });

  it('should have owner files that exist', () => {
    const paths = sources.map((s) => s.path);
    const missing = Object.values(OWNERS)
      .flatMap((o) => [o.owner, o.readModel ?? o.owner])
      .filter((p) => !paths.some((s) => (p.endsWith('/') ? s.startsWith(p) : s === p)));
    expect(missing).toEqual([]);
  });

  it('should see SQL across lines and in FROM lists (the parser is not blind)', () => {
    expect(namesTable('`SELECT 1 FROM\n   hosts h`', 'hosts')).toBe(true);
    expect(namesTable('`SELECT 1 FROM aggregates a, hosts h`', 'hosts')).toBe(true);
    expect(namesTable('`DELETE FROM webhook_deliveries d USING gone`', 'gone')).toBe(true);
    expect(namesTable('`SELECT hosts FROM pools`', 'hosts')).toBe(false);
    expect(namesTable('`WITH events AS (SELECT 1) SELECT * FROM events`', 'events')).toBe(false);
    expect(code('// SELECT 1 FROM hosts\nconst x = 1;')).not.toContain('hosts');
  });
});
