import {
  Check,
  CheckSyntaxError,
  Credentials,
  evaluate,
  parseCheck,
  ruleNames,
  Target,
} from './check.js';
import { DEFAULT_RULES, RuleDefault } from './default-rules.js';

/** A rule as an operator wrote it, with where (for the error that names its line). */
export interface RuleOverride {
  name: string;
  check: string;
  /** `policy.yaml:12`, or null when not from a file. */
  where: string | null;
}

/** The rules in force: defaults, each replaced by an override when one is given. */
export class RuleSet {
  private constructor(private readonly rules: Map<string, Check>) {}

  /**
   * Builds the rules; returns every problem (a check that does not parse, a `rule:` that
   * names no rule, a loop of rules, a misspelt blazar:/climate: name) rather than the first.
   */
  static build(
    overrides: RuleOverride[] = [],
    defaults: RuleDefault[] = DEFAULT_RULES,
  ): { rules: RuleSet; problems: string[] } {
    const problems: string[] = [];
    const known = new Set(defaults.map((d) => d.name));
    const parsed = new Map<string, Check>();
    const where = new Map<string, string | null>();
    for (const d of defaults) parsed.set(d.name, parseCheck(d.check));
    for (const o of overrides) {
      const at = o.where === null ? `${o.name}` : `${o.where}: ${o.name}`;
      if (/^(blazar|climate):/.test(o.name) && !known.has(o.name)) {
        problems.push(`${at}: no such rule (see docs/policy.yaml.sample for the names)`);
        continue;
      }
      try {
        parsed.set(o.name, parseCheck(o.check));
        where.set(o.name, o.where);
      } catch (error) {
        if (!(error instanceof CheckSyntaxError)) throw error;
        problems.push(`${at}: "${o.check}" does not parse: ${error.message}`);
      }
    }
    for (const [name, check] of parsed) {
      for (const named of ruleNames(check)) {
        if (!parsed.has(named)) {
          const w = where.get(name);
          problems.push(`${w ? `${w}: ` : ''}${name}: rule:${named} names no rule`);
        }
      }
    }
    problems.push(...loops(parsed, where));
    return { rules: new RuleSet(parsed), problems };
  }

  has(name: string): boolean {
    return this.rules.has(name);
  }

  /** Whether the rule passes; a name that is not a rule never does. */
  allows(name: string, target: Target, credentials: Credentials): boolean {
    const check = this.rules.get(name);
    return check !== undefined && evaluate(check, target, credentials, (n) => this.rules.get(n));
  }
}

/** Rules that reach themselves through rule: checks would never finish evaluating. */
function loops(rules: Map<string, Check>, where: Map<string, string | null>): string[] {
  const problems: string[] = [];
  const done = new Set<string>();
  const visit = (name: string, path: string[]): void => {
    if (path.includes(name)) {
      const cycle = [...path.slice(path.indexOf(name)), name];
      const w = where.get(cycle[0]);
      problems.push(
        `${w ? `${w}: ` : ''}${cycle[0]}: rules refer to each other in a loop (${cycle.join(' -> ')})`,
      );
      return;
    }
    if (done.has(name)) return;
    const check = rules.get(name);
    if (check !== undefined) for (const next of ruleNames(check)) visit(next, [...path, name]);
    done.add(name);
  };
  for (const name of rules.keys()) visit(name, []);
  return problems;
}
