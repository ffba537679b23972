import { parseTagFilter, type TagFilter } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EngineHarness, heldDelivery } from '../engine-test-harness.test-support.js';
import { type BroadcastInstance, heldKey } from './broadcast-instance.js';
import { BroadcastLedger } from './broadcast-ledger.js';
import { type BroadcastCandidate, BroadcastSource } from './broadcast-source.js';

let h: EngineHarness;
let ledger: BroadcastLedger;
let source: BroadcastSource;
let woken: string[];

function start(): void {
  const deps = { store: h.store, clock: h.clock, timers: h.timers, topics: h.topics, groups: h.groups };
  ledger = new BroadcastLedger(deps);
  ledger.load();
  woken = [];
  source = new BroadcastSource({
    clock: h.clock,
    timers: h.timers,
    topics: h.topics,
    ledger,
    onReady: (instance) => woken.push(instance.clientId),
  });
}

function subscriptions(map: Record<string, string>): Map<string, TagFilter> {
  return new Map(
    Object.entries(map).map(([topic, expression]) => {
      const parsed = parseTagFilter(expression);
      if (!parsed.ok) throw new Error(parsed.message);
      return [topic, parsed.filter];
    }),
  );
}

function join(clientId: string, topics: readonly string[]): BroadcastInstance {
  return ledger.join(
    h.groups.put('g', { consumeMode: 'broadcasting', startFrom: 'earliest' }),
    clientId,
    topics,
  );
}

const ids = (taken: readonly BroadcastCandidate[]) => taken.map(({ message }) => message.messageId);
const settle = () => h.committed();

beforeEach(() => {
  h = new EngineHarness('bsource');
  start();
});

afterEach(async () => {
  source.stop();
  ledger.close();
  await h.close();
});

describe('BroadcastSource', () => {
  it('takes new messages in log order, at most `max`, moving the cursor past each one taken', () => {
    h.appendMany('a', 5);
    const instance = join('c1', ['a']);
    const all = subscriptions({ a: '*' });
    const first = source.take(instance, all, 3);
    expect(ids(first)).toEqual(['a-0', 'a-1', 'a-2']);
    expect(first.every(({ held }) => held === undefined)).toBe(true);
    expect(instance.cursors.get('a')).toBe(3);
    expect(ids(source.take(instance, all, 10))).toEqual(['a-3', 'a-4']);
    expect(instance.cursors.get('a')).toBe(5);
    expect(source.take(instance, all, 10)).toEqual([]);
  });

  it('gives every instance every message, each from its own cursor (B1)', () => {
    h.appendMany('a', 3);
    const one = join('c1', ['a']);
    const two = join('c2', ['a']);
    const all = subscriptions({ a: '*' });
    expect(ids(source.take(one, all, 2))).toEqual(['a-0', 'a-1']);
    expect(ids(source.take(two, all, 10))).toEqual(['a-0', 'a-1', 'a-2']);
    expect(ids(source.take(one, all, 10))).toEqual(['a-2']);
  });

  it('reads each subscribed topic in turn', () => {
    h.appendMany('a', 2);
    h.appendMany('b', 2);
    const instance = join('c1', ['a', 'b']);
    expect(ids(source.take(instance, subscriptions({ a: '*', b: '*' }), 3))).toEqual(['a-0', 'a-1', 'b-0']);
    expect(ids(source.take(instance, subscriptions({ a: '*', b: '*' }), 3))).toEqual(['b-1']);
  });

  it('passes over messages its filter rejects, and does not come back to them', () => {
    h.appendMany('a', 6, (i) => (i % 3 === 0 ? { tag: 'paid' } : i === 4 ? {} : { tag: 'other' }));
    const instance = join('c1', ['a']);
    const paid = subscriptions({ a: 'paid' });
    expect(ids(source.take(instance, paid, 10))).toEqual(['a-0', 'a-3']);
    expect(instance.cursors.get('a')).toBe(6);
    expect(source.take(instance, subscriptions({ a: '*' }), 10)).toEqual([]);
  });

  it('hands out its released messages first, those of its subscribed topics only, in release order', () => {
    h.appendMany('a', 4);
    h.appendMany('b', 1);
    const instance = join('c1', ['a', 'b']);
    instance.cursors.set('a', 3);
    instance.cursors.set('b', 1);
    for (const [topic, offset] of [
      ['b', 0],
      ['a', 2],
      ['a', 0],
    ] as const) {
      const released = heldDelivery(topic, offset, 'ready');
      instance.held.set(heldKey(topic, offset), released);
      instance.readyAgain.push(released);
    }
    const taken = source.take(instance, subscriptions({ a: '*' }), 10);
    expect(ids(taken)).toEqual(['a-2', 'a-0', 'a-3']);
    expect(taken[0]?.held).toBe(instance.held.get(heldKey('a', 2)));
    expect(taken[2]?.held).toBeUndefined();
    expect(instance.readyAgain.map((d) => `${d.topic}-${d.offset}`)).toEqual(['b-0']);
  });

  it('sets a delay message aside until its time and lets later messages flow past it (T1)', async () => {
    const deliverAt = h.clock.now() + 5_000;
    h.append('a');
    h.append('a', { deliverAt });
    h.append('a');
    const instance = join('c1', ['a']);
    const all = subscriptions({ a: '*' });
    expect(ids(source.take(instance, all, 10))).toEqual(['a-0', 'a-2']);
    expect(instance.delayed).toEqual([{ topic: 'a', offset: 1, deliverAt }]);
    // Its position stays before the delay message, so a restart does not lose it.
    expect(instance.positions()).toEqual({ a: 1 });
    await h.timers.advanceBy(4_999, settle);
    expect(woken).toEqual([]);
    expect(source.take(instance, all, 10)).toEqual([]);
    await h.timers.advanceBy(1, settle);
    expect(woken).toEqual(['c1']);
    expect(instance.delayed).toEqual([]);
    const due = source.take(instance, all, 10);
    expect(ids(due)).toEqual(['a-1']);
    expect(due[0]?.held?.state.state).toBe('ready');
    expect(instance.held.get(heldKey('a', 1))).toBe(due[0]?.held);
  });

  it('takes a delay message whose time has come at once', () => {
    h.append('a', { deliverAt: h.clock.now() });
    const instance = join('c1', ['a']);
    expect(ids(source.take(instance, subscriptions({ a: '*' }), 10))).toEqual(['a-0']);
    expect(instance.delayed).toEqual([]);
  });

  it('wakes each instance when its own delay messages fall due, earliest first, with one timer', async () => {
    const now = h.clock.now();
    h.append('a', { deliverAt: now + 3_000 });
    h.append('b', { deliverAt: now + 1_000 });
    h.append('b', { deliverAt: now + 2_000 });
    const one = join('c1', ['a']);
    const two = join('c2', ['b']);
    // Set aside, a delay message does not count toward `max`: the take goes on past it.
    expect(source.take(one, subscriptions({ a: '*' }), 1)).toEqual([]);
    expect(source.take(two, subscriptions({ b: '*' }), 1)).toEqual([]);
    expect(two.delayed.map((d) => d.offset)).toEqual([0, 1]);
    expect(h.timers.nextDueAtMs()).toBe(now + 1_000);
    await h.timers.advanceBy(1_000, settle);
    expect(woken).toEqual(['c2']);
    expect(two.readyAgain.map((d) => d.offset)).toEqual([0]);
    expect(two.delayed.map((d) => d.offset)).toEqual([1]);
    await h.timers.advanceBy(2_000, settle);
    expect(woken).toEqual(['c2', 'c2', 'c1']);
    expect(ids(source.take(one, subscriptions({ a: '*' }), 10))).toEqual(['a-0']);
    expect(h.timers.nextDueAtMs()).toBeGreaterThan(now + 3_000);
  });

  it('arms no timer once stopped', async () => {
    h.append('a', { deliverAt: h.clock.now() + 1_000 });
    const instance = join('c1', ['a']);
    source.take(instance, subscriptions({ a: '*' }), 10);
    source.stop();
    await h.timers.advanceBy(5_000, settle);
    expect(woken).toEqual([]);
    expect(instance.delayed).toHaveLength(1);
  });

  it('skips what the instance consumed in a past life whose position was not written', async () => {
    h.appendMany('a', 3);
    const instance = join('c1', ['a']);
    void h.store.appendHistory('a-1', {
      group: 'g',
      instance: 'c1',
      topic: 'a',
      offset: 1,
      lease: 1,
      deliveryAttempt: 1,
      consumer: 'push',
      deliveredAt: 0,
      settledAt: 0,
      result: 'committed',
    });
    expect(instance.cursors.get('a')).toBe(0);
    source.stop();
    ledger.close();
    await h.restart();
    start();
    const loaded = ledger.instancesOf('g')[0] as BroadcastInstance;
    expect(ids(source.take(loaded, subscriptions({ a: '*' }), 10))).toEqual(['a-0', 'a-2']);
  });

  it('examines a bounded number of log entries per take, so a selective filter cannot stall', async () => {
    h.appendMany('a', 4_200, (i) => ({ tag: i === 4_199 ? 'rare' : 'common' }));
    await settle();
    const instance = join('c1', ['a']);
    const rare = subscriptions({ a: 'rare' });
    expect(source.take(instance, rare, 10)).toEqual([]);
    const cursor = instance.cursors.get('a') ?? 0;
    expect(cursor).toBeGreaterThanOrEqual(4_096);
    expect(cursor).toBeLessThan(4_199);
    expect(ids(source.take(instance, rare, 10))).toEqual(['a-4199']);
  });

  it('takes nothing from a topic that does not exist', () => {
    const instance = join('c1', ['a']);
    expect(source.take(instance, subscriptions({ nowhere: '*' }), 10)).toEqual([]);
  });
});
