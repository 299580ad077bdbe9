import { pickReplacement, pickSlots, SlotHost } from './pick-slots.js';

const h = (id: number, free: number, used = false): SlotHost => ({ id, free, used });
const plain = (p: Map<number, number> | null) => (p === null ? null : Object.fromEntries(p));

describe('pickSlots', () => {
  const hosts = [h(1, 2, true), h(2, 1, true), h(3, 8), h(4, 8)];

  it.each([
    [3, null, { 1: 2, 2: 1 }],
    [5, null, { 1: 2, 2: 1, 3: 2 }],
    [19, null, { 1: 2, 2: 1, 3: 8, 4: 8 }],
    [20, null, null],
    [2, true, { 1: 2 }],
    [3, true, { 3: 3 }],
    [9, true, null],
    [3, false, { 1: 1, 2: 1, 3: 1 }],
    [4, false, { 1: 1, 2: 1, 3: 1, 4: 1 }],
    [5, false, null],
  ] as const)('should place %i slots with affinity %s as %j', (amount, affinity, expected) => {
    expect(plain(pickSlots(hosts, amount, affinity))).toEqual(expected);
  });

  it('should keep the hosts a reservation has when they still fit', () => {
    expect(plain(pickSlots(hosts, 2, true, new Map([[4, 2]])))).toEqual({ 4: 2 });
    expect(plain(pickSlots(hosts, 3, null, new Map([[4, 1]])))).toEqual({ 4: 3 });
    expect(plain(pickSlots(hosts, 2, false, new Map([[3, 1]])))).toEqual({ 3: 1, 1: 1 });
  });
});

describe('pickReplacement', () => {
  // host 1 already holds one of the reservation's slots and has room for one more
  const hosts = [h(1, 1, true), h(2, 1, true), h(3, 2), h(4, 1)];
  const kept = new Map([[1, 1]]);

  it.each([
    [1, null, kept, { 1: 1 }],
    [2, null, kept, { 1: 1, 2: 1 }],
    [1, false, kept, { 2: 1 }],
    [3, false, kept, { 2: 1, 3: 1, 4: 1 }],
    [4, false, kept, null],
    [2, true, new Map(), { 3: 2 }],
    [1, true, kept, null],
    [3, true, new Map(), null],
  ] as const)(
    'should place %i leaving slots with affinity %s (kept %j) as %j',
    (count, affinity, held, expected) => {
      expect(plain(pickReplacement(hosts, count, affinity, new Map(held)))).toEqual(expected);
    },
  );
});
