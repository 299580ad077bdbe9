import { Credentials, evaluate, parseCheck, Target } from './check.js';

const creds = (over: Partial<Credentials> = {}): Credentials => ({
  user_id: 'u1',
  project_id: 'p1',
  roles: ['member', 'reader'],
  is_admin: false,
  ...over,
});
const rules = new Map([
  ['yes', parseCheck('@')],
  ['no', parseCheck('!')],
  ['owner', parseCheck('project_id:%(project_id)s')],
]);
const lookup = (name: string) => rules.get(name);

describe('parseCheck', () => {
  it.each([
    ['', { kind: 'true' }],
    ['@', { kind: 'true' }],
    ['!', { kind: 'false' }],
    ['role:admin', { kind: 'role', match: 'admin' }],
    ['rule:admin', { kind: 'rule', name: 'admin' }],
    ['is_admin:True', { kind: 'generic', field: 'is_admin', match: 'True' }],
    ["project_id:'p 1'".replace(' ', ''), { kind: 'generic', field: 'project_id', match: 'p1' }],
    [
      'role:a or role:b and role:c',
      {
        kind: 'or',
        checks: [
          { kind: 'role', match: 'a' },
          {
            kind: 'and',
            checks: [
              { kind: 'role', match: 'b' },
              { kind: 'role', match: 'c' },
            ],
          },
        ],
      },
    ],
    [
      '(role:a or role:b) and not role:c',
      {
        kind: 'and',
        checks: [
          {
            kind: 'or',
            checks: [
              { kind: 'role', match: 'a' },
              { kind: 'role', match: 'b' },
            ],
          },
          { kind: 'not', check: { kind: 'role', match: 'c' } },
        ],
      },
    ],
    [
      '(project_id:%(project_id)s)',
      { kind: 'generic', field: 'project_id', match: '%(project_id)s' },
    ],
    ['NOT role:a', { kind: 'not', check: { kind: 'role', match: 'a' } }],
  ])('should parse %j', (text, expected) => {
    expect(parseCheck(text)).toEqual(expected);
  });

  it.each([
    ['role:a or', 'ends where a check was expected'],
    ['(role:a', '"(" is never closed'],
    ['role:a)', 'unexpected ")" after a complete check'],
    ['role:a role:b', 'unexpected "role:b" after a complete check'],
    ['admin', '"admin" is not a check'],
    ['role:', '"role:" is not a check'],
    ['and role:a', '"and" where a check was expected'],
    ['http://example.com/check', 'http checks are not supported'],
    ['()', '")" where a check was expected'],
  ])('should refuse %j', (text, reason) => {
    expect(() => parseCheck(text)).toThrow(reason);
  });
});

describe('evaluate', () => {
  const own: Target = { project_id: 'p1', user_id: 'u1' };
  const other: Target = { project_id: 'p2', user_id: 'u2' };
  it.each<[string, Target, Partial<Credentials>, boolean]>([
    ['@', own, {}, true],
    ['!', own, {}, false],
    ['role:member', own, {}, true],
    ['role:MEMBER', own, {}, true],
    ['role:admin', own, {}, false],
    ['is_admin:True', own, {}, false],
    ['is_admin:True', own, { is_admin: true }, true],
    ['project_id:%(project_id)s', own, {}, true],
    ['project_id:%(project_id)s', other, {}, false],
    ['user_id:%(user_id)s', other, { user_id: 'u2' }, true],
    ['project_id:%(missing)s', own, {}, false],
    ['project_id:p1', other, {}, true],
    ["'p2':%(project_id)s", other, {}, true],
    ["'p2':%(project_id)s", own, {}, false],
    ['True:True', own, {}, true],
    ['roles:reader', own, {}, true],
    ['domain_id:d1', own, {}, false],
    ['token.scope:project', own, { token: { scope: 'project' } }, true],
    ['role:%(role)s', { role: 'reader' }, {}, true],
    ['rule:yes', own, {}, true],
    ['rule:no', own, {}, false],
    ['rule:unknown', own, {}, false],
    ['rule:owner and role:member', other, {}, false],
    ['rule:owner or role:member', other, {}, true],
    ['not rule:owner', other, {}, true],
    ['not (role:member and role:reader)', own, {}, false],
    ['role:admin or (role:member and project_id:%(project_id)s)', own, {}, true],
    ['role:admin or (role:member and project_id:%(project_id)s)', other, {}, false],
    [
      'role:admin or (role:member and project_id:%(project_id)s)',
      other,
      { roles: ['admin'] },
      true,
    ],
  ])('should evaluate %j on %j with %j to %s', (text, target, over, expected) => {
    expect(evaluate(parseCheck(text), target, creds(over), lookup)).toBe(expected);
  });
});
