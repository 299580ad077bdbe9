import { RuleSet } from '../../policy/rule-set.js';
import { makeIdentity } from './identity.js';
import { Policy } from './policy.js';

// A site rule that narrows a project's leases to its user's own.
const { rules } = RuleSet.build([
  { name: 'blazar:leases:get', check: 'user_id:%(user_id)s', where: null },
]);
const caller = makeIdentity('u1', 'p1', ['member', 'reader']);
const owners = [
  { projectId: 'p1', userId: 'u1' },
  { projectId: 'p1', userId: 'u2' },
  { projectId: 'p2', userId: 'u1' },
  { projectId: 'p1', userId: null },
  { projectId: 'p1', userId: 'u1' },
  { projectId: 'p1', userId: 'u2' },
];

describe('Policy.allowsEach', () => {
  it('should answer as allows does for each owner when owners repeat', () => {
    const policy = new Policy(rules);
    const each = policy.allowsEach(caller, 'blazar:leases:get');
    expect(owners.map(each)).toEqual(
      owners.map((o) => policy.allows(caller, 'blazar:leases:get', o)),
    );
    expect(owners.map(each)).toEqual([true, false, true, false, true, false]);
  });

  it('should evaluate the rule once per owner when owners repeat', () => {
    let evaluated = 0;
    const counting = {
      allows: (...args: Parameters<RuleSet['allows']>) => {
        evaluated += 1;
        return rules.allows(...args);
      },
    } as unknown as RuleSet;
    const each = new Policy(counting).allowsEach(caller, 'blazar:leases:get');
    owners.forEach((o) => each(o));
    expect(evaluated).toBe(4);
  });
});
