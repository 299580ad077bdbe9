import type { SourceData, SourceRow } from './blazar-source.js';
import {
  checkFloatingIpUsage,
  FloatingIpRows,
  type FloatingIpUse,
  mapFloatingIps,
} from './map-floatingips.js';

const NET = 'net-a';
const fipRow = (id: string, address: string, network = NET): SourceRow => ({
  id,
  floating_network_id: network,
  subnet_id: 'sub',
  floating_ip_address: address,
  reservable: '1',
  created_at: '2029-11-02 10:00:00',
  updated_at: null,
});
const A = '00000000-0000-4000-8000-00000000000a';
const B = '00000000-0000-4000-8000-00000000000b';
const C = '00000000-0000-4000-8000-00000000000c';

function source(rows: Partial<SourceData>): SourceData {
  return {
    floatingips: [],
    floatingip_reservations: [],
    required_floatingips: [],
    floatingip_allocations: [],
    ...rows,
  } as SourceData;
}

const use = (lease: string, start: number, end: number, id = A): FloatingIpUse => ({
  id: `alloc-${lease}`,
  reservation_id: `r-${lease}`,
  floatingip_id: id,
  start: new Date(Date.UTC(2030, 0, start)).toISOString(),
  end: new Date(Date.UTC(2030, 0, end)).toISOString(),
  lease: `lease ${lease}`,
});

describe('mapFloatingIps', () => {
  it('should keep ids, lower-cased, and name a malformed or twice-registered address', () => {
    const problems: string[] = [];
    const rows = mapFloatingIps(
      source({
        floatingips: [
          fipRow(A.toUpperCase(), '203.0.113.10'),
          fipRow(B, '203.0.113.10'),
          fipRow(C, '203.0.113.300'),
        ],
      }),
      problems,
    );
    expect(rows.map((r) => r.id)).toEqual([A]);
    expect(rows[0]).toMatchObject({ reservable: true, created_at: '2029-11-02T10:00:00.000Z' });
    expect(problems).toEqual([
      `floating IP 203.0.113.10 (${B}): registered twice on network ${NET}`,
      `floating IP 203.0.113.300 (${C}): 203.0.113.300 is an invalid IP format`,
    ]);
  });
});

describe('FloatingIpRows', () => {
  const rows = new FloatingIpRows(
    source({
      floatingips: [fipRow(A, '203.0.113.10'), fipRow(B, '198.51.100.1', 'net-b')],
      floatingip_reservations: [{ id: 'fr', reservation_id: 'res', network_id: NET, amount: '1' }],
      required_floatingips: [{ id: 'q', floatingip_reservation_id: 'fr', address: '203.0.113.10' }],
      floatingip_allocations: [
        { id: C, floatingip_id: A, reservation_id: 'res' },
        { id: C, floatingip_id: B, reservation_id: 'other' },
      ],
    }),
  );

  it('should give the parameters a create takes, required addresses included', () => {
    expect(rows.params('res')).toEqual({
      network_id: NET,
      amount: 1,
      required_floatingips: ['203.0.113.10'],
    });
  });

  it('should refuse an allocation of an address off the reservation network', () => {
    expect(rows.held('res', 'res', NET, 's', 'e')).toEqual([
      { id: C, reservation_id: 'res', floatingip_id: A, start: 's', end: 'e' },
    ]);
    expect(() => rows.held('other', 'other', NET, 's', 'e')).toThrow(
      `allocated floating IP 198.51.100.1 is not on network ${NET}`,
    );
  });
});

describe('checkFloatingIpUsage', () => {
  it('should name an address held twice at once with both leases, and let back-to-back pass', () => {
    const fips = mapFloatingIps(source({ floatingips: [fipRow(A, '203.0.113.10')] }), []);
    expect(checkFloatingIpUsage([use('x', 1, 5), use('y', 5, 8)], fips)).toEqual([]);
    expect(checkFloatingIpUsage([use('x', 1, 5), use('y', 3, 8)], fips)).toEqual([
      'floating IP 203.0.113.10: lease x and lease y overlap from 2030-01-03T00:00:00.000Z to 2030-01-05T00:00:00.000Z',
    ]);
    expect(checkFloatingIpUsage([use('x', 1, 5), use('y', 3, 8, B)], fips)).toEqual([]);
  });
});
