import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';

const SRC = join(__dirname, '..', 'src');

/** Files directly in src/ (the entry files) count as this folder. */
const ROOT = '(root)';

/**
 * The floor plan (docs/development.md): a folder imports only folders on lower floors, or
 * folders on its own floor as long as no cycle forms there.
 */
const FLOORS: Record<string, number> = {
  config: 0,
  database: 0,
  policy: 0,
  common: 1,
  model: 2,
  requirements: 3,
  compute: 3,
  pools: 4,
  hosts: 4,
  notifications: 4,
  observability: 4,
  plugins: 5,
  enforcement: 5,
  reservations: 6,
  leases: 6,
  events: 7,
  scheduler: 7,
  power: 7,
  import: 7,
  [ROOT]: 7,
};

/** Every .ts file under a folder (specs excluded: they may reach anywhere). */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** The folder of src/ a file belongs to. */
function folderOf(path: string): string {
  const parts = relative(SRC, path).split(sep);
  return parts.length === 1 ? ROOT : parts[0];
}

const IMPORT = /(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g;

/** Folder → the other folders its files import from, with one file edge as the example. */
function folderImports(): Map<string, Map<string, string>> {
  const edges = new Map<string, Map<string, string>>();
  for (const file of sources(SRC)) {
    const from = folderOf(file);
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const to = folderOf(normalize(join(dirname(file), spec)));
      if (to === from) continue;
      const targets = edges.get(from) ?? new Map<string, string>();
      if (!targets.has(to)) targets.set(to, `${relative(SRC, file)} imports ${spec}`);
      edges.set(from, targets);
    }
  }
  return edges;
}

describe('the layout of src/', () => {
  const edges = folderImports();
  const imports = (a: string, b: string) => edges.get(a)?.has(b) ?? false;

  /** Same-floor folders reachable from `start`. */
  function sideways(start: string): Set<string> {
    const seen = new Set<string>();
    const todo = [start];
    while (todo.length > 0) {
      const at = todo.pop() as string;
      for (const to of edges.get(at)?.keys() ?? []) {
        if (FLOORS[to] !== FLOORS[at] || seen.has(to)) continue;
        seen.add(to);
        todo.push(to);
      }
    }
    return seen;
  }

  it('should give every folder of src/ a floor', () => {
    // A folder with no sources (one left empty by a move) holds nothing to place.
    const folders = readdirSync(SRC).filter(
      (n) => statSync(join(SRC, n)).isDirectory() && sources(join(SRC, n)).length > 0,
    );
    expect(folders.filter((f) => FLOORS[f] === undefined)).toEqual([]);
  });

  it('should have no import from a folder up to a higher floor', () => {
    const upward: string[] = [];
    for (const [from, targets] of edges) {
      for (const [to, example] of targets) {
        if (FLOORS[to] > FLOORS[from]) {
          upward.push(
            `${from}/ (floor ${FLOORS[from]}) -> ${to}/ (floor ${FLOORS[to]}): ${example}`,
          );
        }
      }
    }
    expect(upward).toEqual([]);
  });

  it('should have no cycle between folders of one floor', () => {
    const cycles: string[] = [];
    for (const [from, targets] of edges) {
      for (const [to, example] of targets) {
        if (FLOORS[to] !== FLOORS[from]) continue;
        if (sideways(to).has(from)) cycles.push(`${from}/ -> ${to}/ closes a cycle: ${example}`);
      }
    }
    expect(cycles).toEqual([]);
  });

  it('should see the imports it checks (the parser is not blind)', () => {
    expect(imports('leases', 'model')).toBe(true);
    expect(imports('hosts', 'pools')).toBe(true);
    expect(imports('database', 'config')).toBe(true);
    expect(imports(ROOT, 'config')).toBe(true);
    // A dynamic import counts too.
    expect("await import('../x/y.js')".match(IMPORT)).not.toBeNull();
  });

  it('should reach virtual:floatingip only through the plugin list (a type is one folder)', () => {
    const folder = join(SRC, 'plugins', 'virtual-floatingip');
    // The Blazar importer (top floor) writes the type's rows through its repository.
    const importer = join(SRC, 'import');
    const importers = sources(SRC).filter(
      (file) =>
        !file.startsWith(folder) &&
        !file.startsWith(importer) &&
        [...readFileSync(file, 'utf8').matchAll(IMPORT)].some(([, spec]) =>
          normalize(join(dirname(file), spec)).startsWith(folder),
        ),
    );
    expect(importers.map((f) => relative(SRC, f))).toEqual([join('plugins', 'plugin-list.ts')]);
  });

  it('should make only configuration and metrics global (every other module imports what it uses)', () => {
    const files = sources(SRC).map((f) => [relative(SRC, f), readFileSync(f, 'utf8')]);
    expect(files.filter(([, text]) => /@Global\(\)/.test(text)).map(([f]) => f)).toEqual([
      join('config', 'config.module.ts'),
      join('observability', 'observability.module.ts'),
    ]);
    // The app's ground (database, clock, auth, compute driver) is the one global dynamic module.
    expect(files.filter(([, text]) => /global:\s*true/.test(text)).map(([f]) => f)).toEqual([
      'app.module.ts',
    ]);
  });

  it('should keep each resource type in its plugin folder', () => {
    const pools = sources(join(SRC, 'pools')).map((f) => relative(SRC, f));
    expect(pools.filter((f) => /slot|claim|instance|host-mover/.test(f))).toEqual([]);
  });
});
