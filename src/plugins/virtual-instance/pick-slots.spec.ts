import { pickSlots, SlotHost } from './pick-slots.js';

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
