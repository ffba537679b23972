import { describe, expect, it } from 'vitest';
import { DeliveryMap } from './delivery-map.js';

describe('DeliveryMap', () => {
  it('keys by group, topic and offset together', () => {
    const map = new DeliveryMap<string>();
    map.set({ group: 'g', topic: 't', offset: 1 }, 'g/t/1');
    map.set({ group: 'g', topic: 'u', offset: 1 }, 'g/u/1');
    map.set({ group: 'h', topic: 't', offset: 1 }, 'h/t/1');
    map.set({ group: 'g', topic: 't', offset: 2 }, 'g/t/2');
    expect(map.size).toBe(4);
    expect(map.get({ group: 'g', topic: 'u', offset: 1 })).toBe('g/u/1');
    expect(map.get({ group: 'h', topic: 't', offset: 1 })).toBe('h/t/1');
    expect(map.get({ group: 'h', topic: 't', offset: 2 })).toBeUndefined();
    expect(map.has({ group: 'g', topic: 't', offset: 2 })).toBe(true);
    expect([...map.values()].sort()).toEqual(['g/t/1', 'g/t/2', 'g/u/1', 'h/t/1']);
  });

  it('counts a replaced entry once and a deleted one not at all', () => {
    const map = new DeliveryMap<number>();
    const address = { group: 'g', topic: 't', offset: 7 };
    map.set(address, 1);
    map.set({ ...address }, 2);
    expect(map.size).toBe(1);
    expect(map.get(address)).toBe(2);
    expect(map.delete({ ...address })).toBe(true);
    expect(map.delete(address)).toBe(false);
    expect(map.delete({ group: 'x', topic: 't', offset: 7 })).toBe(false);
    expect(map.size).toBe(0);
    expect(map.get(address)).toBeUndefined();
  });

  it('clears every entry and takes new ones after', () => {
    const map = new DeliveryMap<number>();
    for (let offset = 0; offset < 10; offset++) map.set({ group: 'g', topic: 't', offset }, offset);
    map.clear();
    expect(map.size).toBe(0);
    expect([...map.values()]).toEqual([]);
    map.set({ group: 'g', topic: 't', offset: 3 }, 3);
    expect([...map.values()]).toEqual([3]);
  });
});
