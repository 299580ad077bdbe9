import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';

const SRC = join(__dirname, '..', 'src');

/** Every .ts file under a folder (specs excluded: they may reach anywhere). */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return name.endsWith('.ts') && !name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** Top folder of src/ → the top folders its files import from. */
function folderImports(): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const file of sources(SRC)) {
    const from = relative(SRC, file).split(sep)[0];
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
      const to = relative(SRC, normalize(join(dirname(file), spec))).split(sep)[0];
      if (to === from || to.endsWith('.js')) continue;
      edges.set(from, (edges.get(from) ?? new Set()).add(to));
    }
  }
  return edges;
}

describe('the layout of src/', () => {
  const edges = folderImports();
  const imports = (a: string, b: string) => edges.get(a)?.has(b) ?? false;

  it.each([
    ['pools', 'plugins'],
    ['hosts', 'plugins'],
    ['scheduler', 'pools'],
    ['scheduler', 'hosts'],
    ['pools', 'hosts'],
    ['scheduler', 'plugins'],
  ])('should have no import from %s/ to %s/ (no cycle between them)', (a, b) => {
    expect(imports(a, b)).toBe(false);
  });

  it('should see the imports it checks (the parser is not blind)', () => {
    expect(imports('plugins', 'pools')).toBe(true);
    expect(imports('hosts', 'pools')).toBe(true);
    expect(imports('pools', 'scheduler')).toBe(true);
  });

  it('should keep each resource type in its plugin folder', () => {
    const pools = sources(join(SRC, 'pools')).map((f) => relative(SRC, f));
    expect(pools.filter((f) => /slot|claim|instance|host-mover/.test(f))).toEqual([]);
  });
});
