import { readFileSync } from 'node:fs';

export interface TokenEntry {
  user_id: string;
  project_id: string;
  roles: string[];
}

function isEntry(value: unknown): value is TokenEntry {
  const v = value as Partial<TokenEntry> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.user_id === 'string' &&
    typeof v.project_id === 'string' &&
    Array.isArray(v.roles) &&
    v.roles.every((r) => typeof r === 'string')
  );
}

/** Parses the tokens file; throws an error that tells the operator what is wrong. */
export function readTokensFile(path: string): Map<string, TokenEntry> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`AUTH_TOKENS_FILE ${path}: cannot read it as JSON`, { cause: error });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`AUTH_TOKENS_FILE ${path}: must be a JSON object of token -> identity`);
  }
  const tokens = new Map<string, TokenEntry>();
  for (const [token, entry] of Object.entries(parsed)) {
    if (!isEntry(entry)) {
      throw new Error(
        `AUTH_TOKENS_FILE ${path}: token ${token.slice(0, 4)}… needs user_id, project_id, roles[]`,
      );
    }
    tokens.set(token, entry);
  }
  return tokens;
}
