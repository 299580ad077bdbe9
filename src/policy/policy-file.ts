import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { isMap, isScalar, LineCounter, parseDocument } from 'yaml';
import type { RuleOverride } from './rule-set.js';

/**
 * Reads an oslo.policy file: a YAML (or JSON, which YAML reads too) mapping of rule name
 * to check string. Problems name the file's line.
 */
export function readPolicyFile(path: string): { overrides: RuleOverride[]; problems: string[] } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    return {
      overrides: [],
      problems: [`POLICY_FILE=${path}: cannot read it (${(error as Error).message})`],
    };
  }
  return parsePolicyText(text, basename(path));
}

export function parsePolicyText(
  text: string,
  name: string,
): { overrides: RuleOverride[]; problems: string[] } {
  const lines = new LineCounter();
  const document = parseDocument(text, { lineCounter: lines, uniqueKeys: true });
  const at = (offset: number | undefined) =>
    `POLICY_FILE ${name}:${offset === undefined ? '?' : lines.linePos(offset).line}`;
  if (document.errors.length > 0) {
    return {
      overrides: [],
      problems: document.errors.map((e) => `${at(e.pos[0])}: ${e.message.split('\n')[0]}`),
    };
  }
  const root = document.contents;
  // An empty file (or only comments) overrides nothing, as in oslo.policy.
  if (root === null) return { overrides: [], problems: [] };
  if (!isMap(root)) {
    return {
      overrides: [],
      problems: [`${at(root.range?.[0])}: must be a mapping of rule name to check string`],
    };
  }
  const overrides: RuleOverride[] = [];
  const problems: string[] = [];
  for (const pair of root.items) {
    const key = isScalar(pair.key) ? pair.key : null;
    const where = at(key?.range?.[0]);
    const value = isScalar(pair.value) ? pair.value.value : undefined;
    if (key === null || typeof key.value !== 'string') {
      problems.push(`${where}: a rule name must be a string`);
    } else if (typeof value !== 'string') {
      problems.push(`${where}: ${key.value}: the check must be a string (quote it)`);
    } else {
      overrides.push({ name: key.value, check: value, where });
    }
  }
  return { overrides, problems };
}
