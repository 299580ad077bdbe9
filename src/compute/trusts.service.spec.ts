import type { DataSource } from 'typeorm';
import { makeIdentity } from '../common/auth/identity.js';
import type { KeystoneClient } from './keystone.client.js';
import { TrustsService } from './trusts.service.js';

/** Records the trusts asked for; Keystone itself is exercised by the OpenStack suite. */
function keystoneAsked(): { client: KeystoneClient; asked: string[][] } {
  const asked: string[][] = [];
  const client = {
    createTrust: async (_token: string, caller: { roles: string[] }) => {
      asked.push(caller.roles);
      return 'trust-1';
    },
  } as unknown as KeystoneClient;
  return { client, asked };
}

describe('TrustsService.create', () => {
  const withToken = (roles: string[]) => ({ ...makeIdentity('u', 'p', roles), token: 'tok' });

  it.each([
    [['member', 'reader'], ['member', 'reader'], 'trust-1'],
    [['admin', 'member', 'reader'], ['member', 'reader'], 'trust-1'],
    [['admin'], null, null],
  ] as const)('should delegate %j as %j', async (roles, delegated, expected) => {
    const { client, asked } = keystoneAsked();
    const trusts = new TrustsService({} as DataSource, client);
    expect(await trusts.create(withToken([...roles]))).toBe(expected);
    expect(asked).toEqual(delegated === null ? [] : [delegated]);
  });

  it('should make no trust without Keystone or without a caller token', async () => {
    const { client, asked } = keystoneAsked();
    expect(await new TrustsService({} as DataSource, null).create(withToken(['member']))).toBe(
      null,
    );
    expect(
      await new TrustsService({} as DataSource, client).create(makeIdentity('u', 'p', ['member'])),
    ).toBe(null);
    expect(asked).toEqual([]);
  });
});
