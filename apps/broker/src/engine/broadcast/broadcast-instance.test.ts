import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngineHarness, heldDelivery } from '../engine-test-harness.test-support.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { BroadcastInstance, heldKey, instanceKey } from './broadcast-instance.js';

let h: EngineHarness;
let group: GroupRuntime;
let instance: BroadcastInstance;

function hold(topic: string, offset: number, state: 'inflight' | 'ready' = 'inflight'): void {
  const delivery = heldDelivery(topic, offset, state);
  instance.held.set(heldKey(topic, offset), delivery);
  if (state === 'ready') instance.readyAgain.push(delivery);
}

beforeEach(() => {
  h = new EngineHarness('instance');
  group = h.groups.put('g', { consumeMode: 'broadcasting' });
  instance = new BroadcastInstance(group, 'client-1', 500);
});

afterEach(() => h.close());

describe('BroadcastInstance', () => {
  it('is keyed by group and clientId, and addresses its messages under that key', () => {
    expect(instance.key).toBe(instanceKey('g', 'client-1'));
    expect(instanceKey('g', 'a')).not.toBe(instanceKey('g', 'b'));
    // No concatenation of a group and a clientId can collide with another pair.
    expect(instanceKey('ab', 'c')).not.toBe(instanceKey('a', 'bc'));
    expect(instance.addressOf('t', 4)).toEqual({ group: instance.key, topic: 't', offset: 4 });
    expect(new BroadcastInstance(group, 'client-2', 0).addressOf('t', 4)).not.toEqual(
      instance.addressOf('t', 4),
    );
    expect(heldKey('t', 12)).not.toBe(heldKey('t1', 2));
  });

  it('stores as position the lowest offset it still holds or waits for, else its cursor', () => {
    instance.cursors.set('a', 10);
    instance.cursors.set('b', 7);
    instance.cursors.set('c', 3);
    expect(instance.positions()).toEqual({ a: 10, b: 7, c: 3 });
    hold('a', 8);
    hold('a', 5, 'ready');
    instance.delayed.push({ topic: 'b', offset: 2, deliverAt: 9_999 });
    hold('b', 4);
    expect(instance.positions()).toEqual({ a: 5, b: 2, c: 3 });
  });

  it('counts as backlog the messages after its cursors plus the released and delayed ones', () => {
    h.appendMany('a', 10);
    h.appendMany('b', 4);
    instance.cursors.set('a', 6);
    instance.cursors.set('b', 4);
    instance.cursors.set('unknown', 2);
    const nextOffsetOf = (topic: string) => h.topics.get(topic)?.nextOffset;
    expect(instance.backlog(nextOffsetOf)).toBe(4);
    hold('a', 1, 'ready');
    hold('a', 2);
    instance.delayed.push({ topic: 'b', offset: 3, deliverAt: 9_999 });
    // The inflight one is not backlog: it is counted by `inflight`.
    expect(instance.backlog(nextOffsetOf)).toBe(4 + 1 + 1);
  });

  it('counts as inflight the held messages not Ready again', () => {
    expect(instance.inflight).toBe(0);
    hold('a', 1);
    hold('a', 2);
    hold('a', 3, 'ready');
    expect(instance.inflight).toBe(2);
  });

  it('makes the record that stores it, positions and last-seen time', () => {
    instance.cursors.set('a', 9);
    hold('a', 6);
    instance.lastSeenAt = 7_000;
    expect(instance.toRecord()).toEqual({
      group: 'g',
      clientId: 'client-1',
      positions: { a: 6 },
      lastSeenAt: 7_000,
    });
  });
});
