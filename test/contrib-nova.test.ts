import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const CONTRIB = join(__dirname, '..', 'contrib', 'nova');
const TESTS = join(CONTRIB, 'climatenova', 'tests');
/** The tests written with the filter; fewer means some went missing. */
const MIN_TESTS = 55;
/** Debian's python3 with python3-nova; a pyenv python has no Nova. */
const PYTHON = '/usr/bin/python3';
const ENV = { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', PYTHONDONTWRITEBYTECODE: '1' };

// Importing Nova takes a few seconds; the timeout tests wait on purpose.
jest.setTimeout(150_000);

/** How many test methods the test_*.py files define. */
function definedTests(): number {
  return readdirSync(TESTS)
    .filter((name) => /^test_.*\.py$/.test(name))
    .map((name) => readFileSync(join(TESTS, name), 'utf8').match(/^ {4}def test_/gm)?.length ?? 0)
    .reduce((a, b) => a + b, 0);
}

describe('the Nova scheduler filter (contrib/nova)', () => {
  let run: SpawnSyncReturns<string>;
  let output: string;

  beforeAll(() => {
    run = spawnSync(PYTHON, ['-m', 'unittest', 'discover', '-v'], {
      cwd: CONTRIB,
      env: ENV,
      encoding: 'utf8',
      timeout: 120_000,
    });
    output = `${run.stdout ?? ''}${run.stderr ?? ''}`;
  });

  it('should pass every Python test when run with the system python3', () => {
    expect(run.error).toBeUndefined();
    if (run.status !== 0) console.error(output);
    expect(run.status).toBe(0);
    expect(output).toMatch(/^OK\b/m);
  });

  it('should run every test written when discovering them', () => {
    const ran = Number(/^Ran (\d+) tests? in /m.exec(output)?.[1] ?? -1);
    expect(definedTests()).toBeGreaterThanOrEqual(MIN_TESTS);
    expect(ran).toBeGreaterThanOrEqual(definedTests());
  });

  it('should skip nothing when python3-nova is installed', () => {
    const nova = spawnSync(PYTHON, ['-c', 'import nova.scheduler.filters, keystoneauth1'], {
      env: ENV,
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (nova.status !== 0) return; // the Nova tests skip themselves there
    expect(output).not.toMatch(/skipped/);
  });

  it('should load as a Nova host filter when given its class path', () => {
    const check = spawnSync(
      PYTHON,
      [
        '-c',
        'from nova.scheduler import filters\n' +
          'from climatenova.filter import ClimateFilter\n' +
          'assert issubclass(ClimateFilter, filters.BaseHostFilter)\n' +
          'assert ClimateFilter.run_filter_once_per_request\n',
      ],
      { cwd: CONTRIB, env: ENV, encoding: 'utf8', timeout: 60_000 },
    );
    const noNova = /No module named 'nova'/.test(check.stderr ?? '');
    if (noNova) return; // no python3-nova on this machine
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
  });
});
