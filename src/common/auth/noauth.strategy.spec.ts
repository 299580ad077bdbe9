import { NoAuthStrategy } from './noauth.strategy.js';

describe('NoAuthStrategy', () => {
  const auth = new NoAuthStrategy();

  it('should refuse a project or user id longer than its column with 400', async () => {
    await expect(auth.authenticate({ 'x-project-id': 'p'.repeat(256) })).rejects.toMatchObject({
      status: 400,
      message: 'X-Project-Id must be at most 255 characters',
    });
    await expect(auth.authenticate({ 'x-user-id': 'u'.repeat(256) })).rejects.toMatchObject({
      status: 400,
      message: 'X-User-Id must be at most 255 characters',
    });
  });

  it('should take 255-character ids and default to admin when headers are absent', async () => {
    const caller = await auth.authenticate({ 'x-project-id': 'p'.repeat(255), 'x-roles': 'm' });
    expect(caller).toMatchObject({ projectId: 'p'.repeat(255), userId: 'admin', isAdmin: false });
    expect(await auth.authenticate({})).toMatchObject({ projectId: 'admin', isAdmin: true });
  });

  it.each([
    ['admin', ['admin', 'member', 'reader']],
    ['member', ['member', 'reader']],
    ['reader', ['reader']],
    ['Member,gpu', ['Member', 'gpu', 'reader']],
    ['', []],
  ])('should give X-Roles %j the roles it implies, as Keystone does: %j', async (roles, all) => {
    const caller = await auth.authenticate({ 'x-roles': roles });
    expect([...caller.roles].sort()).toEqual([...all].sort());
  });
});
