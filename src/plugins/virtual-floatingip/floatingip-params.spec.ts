import { validateFloatingIpParams, validateFloatingIpUpdate } from './floatingip-params.js';
import { placeIn } from './floatingips.service.js';

describe('virtual:floatingip parameters', () => {
  it('should take network_id, an int-like amount and required addresses', () => {
    expect(
      validateFloatingIpParams({
        network_id: 'n',
        amount: '2',
        required_floatingips: ['203.0.113.5'],
      }),
    ).toEqual({ network_id: 'n', amount: 2, required_floatingips: ['203.0.113.5'] });
    expect(validateFloatingIpParams({ network_id: 'n', amount: 1 }).required_floatingips).toEqual(
      [],
    );
  });

  it.each([
    [{ amount: 1 }, 'Missing parameter network_id'],
    [{ network_id: 'n' }, 'Missing parameter amount'],
    [{ network_id: 'n', amount: 0 }, 'Malformed parameter amount'],
    [{ network_id: 'n', amount: 1.5 }, 'Malformed parameter amount'],
    [{ network_id: '', amount: 1 }, 'Malformed parameter network_id'],
    [{ network_id: 'n', amount: 1, required_floatingips: '203.0.113.5' }, 'Malformed parameter'],
    [{ network_id: 'n', amount: 1, required_floatingips: ['x'] }, 'x is an invalid IP format'],
    [
      { network_id: 'n', amount: 1, required_floatingips: ['1.1.1.1', '1.1.1.2'] },
      'must not exceed',
    ],
    [{ network_id: 'n', amount: 2, required_floatingips: ['1.1.1.1', '1.1.1.1'] }, 'twice'],
    [{ network_id: 'n', amount: 1, extra: 1 }, 'Unknown parameter extra'],
  ])('should refuse %j with a 400', (values, message) => {
    expect(() => validateFloatingIpParams(values)).toThrow(message);
  });

  const current = { network_id: 'n', amount: 2, required_floatingips: ['203.0.113.5'] };

  it('should let amount change, and required_floatingips only to []', () => {
    expect(validateFloatingIpUpdate(current, { amount: 1 }, false).amount).toBe(1);
    expect(validateFloatingIpUpdate(current, { amount: 3 }, true).amount).toBe(3);
    expect(validateFloatingIpUpdate(current, { required_floatingips: [] }, true)).toEqual({
      ...current,
      required_floatingips: [],
    });
    expect(validateFloatingIpUpdate(current, { network_id: 'n' }, false)).toEqual(current);
  });

  it.each([
    [{ network_id: 'other' }, false, 'network_id'],
    [{ required_floatingips: ['203.0.113.6'] }, false, 'only be updated to an empty list'],
    [{ amount: 1 }, true, 'can only grow'],
    [{ vcpus: 2 }, false, 'Unknown parameter vcpus'],
  ])('should refuse the update %j (started: %s)', (changes, started, message) => {
    expect(() => validateFloatingIpUpdate(current, changes, started)).toThrow(message);
  });
});

describe('where an address sits in a subnet', () => {
  const v4 = {
    id: 's',
    cidr: '203.0.113.0/24',
    gatewayIp: '203.0.113.1',
    allocationPools: [{ start: '203.0.113.10', end: '203.0.113.199' }],
  };
  it.each([
    ['203.0.113.2', 'free'],
    ['203.0.113.254', 'free'],
    ['203.0.113.1', 'neutron'],
    ['203.0.113.10', 'neutron'],
    ['203.0.113.199', 'neutron'],
    ['203.0.114.2', 'outside'],
    ['2001:db8::2', 'outside'],
  ])('should place %s as %s', (address, place) => {
    expect(placeIn(v4, address)).toBe(place);
  });

  it('should place IPv6 addresses in an IPv6 subnet, without a gateway', () => {
    const v6 = { id: 's6', cidr: '2001:db8::/64', gatewayIp: null, allocationPools: [] };
    expect(placeIn(v6, '2001:db8::1')).toBe('free');
    expect(placeIn(v6, '2001:db9::1')).toBe('outside');
    expect(placeIn(v6, '203.0.113.2')).toBe('outside');
  });
});
