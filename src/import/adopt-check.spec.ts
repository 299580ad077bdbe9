import type { ComputeSurvey } from '../compute/compute-driver.js';
import { checkAdoption, type ClimateRecord, type RecordedReservation } from './adopt-check.js';

const R = '11111111-2222-3333-4444-555555555555';

function reservation(values: Partial<RecordedReservation>): RecordedReservation {
  return {
    id: R,
    lease: 'l1 (lease-id)',
    type: 'physical:host',
    status: 'active',
    leaseStatus: 'ACTIVE',
    serverGroupId: null,
    slots: new Map(),
    ...values,
  };
}

function record(values: Partial<ClimateRecord>): ClimateRecord {
  return { poolOf: new Map(), pools: [], reservations: [], sizes: new Map(), ...values };
}

function survey(pools: [string, string | null, string[]][], more: Partial<ComputeSurvey> = {}) {
  return {
    pools: pools.map(([name, zone, hosts], i) => ({
      id: i + 1,
      name,
      availabilityZone: zone,
      metadata: {},
      hosts,
    })),
    flavors: [],
    serverGroups: [],
    reservationClasses: [],
    ...more,
  };
}

describe('checkAdoption', () => {
  const cases: [string, ClimateRecord, ComputeSurvey, string[], string[]][] = [
    [
      'nothing when Nova holds what Climate holds',
      record({ poolOf: new Map([['h1', 'freepool']]) }),
      survey([['freepool', null, ['h1']]]),
      [],
      [],
    ],
    [
      'a missing freepool, named as configured, and its hosts added',
      record({ poolOf: new Map([['h1', 'freepool']]) }),
      survey([]),
      ['Nova has no freepool aggregate named blazar-free', 'host h1 is in no pool in Nova'],
      ['ensure-pool', 'add-host'],
    ],
    [
      'a host in two pools, taken out of the one Climate does not have it in',
      record({
        poolOf: new Map([['h1', R]]),
        reservations: [reservation({})],
        pools: [
          {
            name: R,
            kind: 'reservation',
            availabilityZone: `blazar_${R}`,
            metadata: {},
            hosts: ['h1'],
          },
        ],
      }),
      survey([
        ['freepool', null, ['h1']],
        [R, `blazar_${R}`, ['h1']],
      ]),
      [`host h1 is in 2 pools in Nova (${R}, freepool); Climate has it in ${R}`],
      ['remove-host'],
    ],
    [
      "a running reservation's missing aggregate: its start again",
      record({ poolOf: new Map([['h1', R]]), reservations: [reservation({})] }),
      survey([['freepool', null, ['h1']]]),
      [
        `host h1 is in freepool in Nova; Climate has it in ${R}`,
        `aggregate ${R} of reservation ${R}`,
      ],
      ['resync', 'resync'],
    ],
    [
      "a pending reservation's missing aggregate: left to its start",
      record({ reservations: [reservation({ status: 'pending' })] }),
      survey([['freepool', null, []]]),
      [`aggregate ${R} of reservation ${R} (lease l1 (lease-id)) is missing in Nova`],
      [],
    ],
    [
      "a running instance reservation's lost group and flavor, and Placement short of a slot",
      record({
        reservations: [
          reservation({
            type: 'virtual:instance',
            serverGroupId: 'g1',
            slots: new Map([['h1', 2]]),
          }),
        ],
        pools: [{ name: R, kind: 'instance', availabilityZone: null, metadata: {}, hosts: ['h1'] }],
        sizes: new Map([[R, new Map([['h1', 1]])]]),
      }),
      survey([
        ['freepool', null, []],
        [R, null, ['h1']],
      ]),
      [
        `flavor ${R} of reservation`,
        `server group g1 of reservation`,
        'Placement sizes reservation',
      ],
      ['resync', 'forget-group', 'resync', 'resync'],
    ],
  ];

  it.each(cases)('should find %s', (_name, climate, nova, problems, heals) => {
    const found = checkAdoption(climate, nova, 'blazar-free');
    expect(found).toHaveLength(problems.length);
    problems.forEach((p, i) => expect(found[i].problem).toContain(p));
    expect(found.flatMap((f) => f.heals.map((h) => h.kind))).toEqual(heals);
  });
});
