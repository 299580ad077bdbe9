import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const SRC = join(__dirname, '..', 'src');

function controllers(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return controllers(path);
    return name.endsWith('.controller.ts') ? [path] : [];
  });
}

const CONTROLLER = /@Controller\(\s*(?:'([^']*)')?\s*\)(?:\s*@\w+\([^)]*\))*\s*export class (\w+)/;
const ROUTE = /@(?:Get|Post|Put|Patch|Delete)\(\s*(?:'([^']*)')?\s*\)/g;

/** `/v1/os-hosts` of `v1/os-hosts/:id/power`: the API's version and its first segment. */
function prefixOf(...parts: (string | undefined)[]): string {
  const segments = parts.flatMap((p) => (p ?? '').split('/')).filter((s) => s !== '');
  return `/${segments.slice(0, segments[0] === 'v1' ? 2 : 1).join('/')}`;
}

describe('the controllers', () => {
  const files = controllers(SRC).map((f) => ({
    file: relative(SRC, f),
    text: readFileSync(f, 'utf8'),
  }));

  it('should serve each URL prefix from one controller', () => {
    const owners = new Map<string, Set<string>>();
    for (const { file, text } of files) {
      const found = CONTROLLER.exec(text);
      if (found === null) throw new Error(`${file}: no @Controller() class`);
      const [, base, name] = found;
      for (const [, path] of text.matchAll(ROUTE)) {
        const prefix = prefixOf(base, path);
        owners.set(prefix, (owners.get(prefix) ?? new Set()).add(name));
      }
    }
    const shared = [...owners].filter(([, names]) => names.size > 1);
    expect(shared.map(([prefix, names]) => `${prefix}: ${[...names].join(', ')}`)).toEqual([]);
    // The parser sees the routes it checks.
    expect(owners.get('/v1/os-hosts')).toEqual(new Set(['HostsController']));
    expect(owners.get('/v1/leases')).toEqual(new Set(['LeasesController']));
  });

  it('should take every body as a request class the validation pipe checks', () => {
    const loose = files.flatMap(({ file, text }) =>
      [...text.matchAll(/@Body\(\)\s*\w+\s*:\s*(\w+)/g)]
        .filter(([, type]) => !/^[A-Z]\w*(Request|Dto)$/.test(type.trim()))
        .map(([match]) => `${file}: ${match}`),
    );
    expect(loose).toEqual([]);
  });
});
