import { broadcastTransition } from '@ricochet/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HistoryRecord } from '../../store/records.js';
import { EngineHarness, heldDelivery } from '../engine-test-harness.test-support.js';
import { WRITE_BEHIND_MS } from '../model/delivery-records.js';
import { type BroadcastInstance, heldKey } from './broadcast-instance.js';
import { BroadcastLedger } from './broadcast-ledger.js';

const TTL_MS = 10 * 60_000;
const SWEEP_MS = 60_000;

let h: EngineHarness;
let ledger: BroadcastLedger;

const newLedger = () =>
  new BroadcastLedger({
    store: h.store,
    clock: h.clock,
    timers: h.timers,
    topics: h.topics,
    groups: h.groups,
  });
const settle = () => h.committed();
const stored = () => h.store.listBroadcastInstances();
const broadcasting = (name = 'g', startFrom: 'latest' | 'earliest' = 'latest') =>
  h.groups.put(name, { consumeMode: 'broadcasting', broadcastInstanceTtlMs: TTL_MS, startFrom });

beforeEach(() => {
  h = new EngineHarness('ledger');
  ledger = newLedger();
  ledger.load();
});

afterEach(async () => {
  ledger.close();
  await h.close();
});

describe('BroadcastLedger', () => {
  it('starts a new instance at the end of each topic (latest) and stores it at once', async () => {
    h.appendMany('a', 5);
    const group = broadcasting();
    const instance = ledger.join(group, 'c1', ['a', 'b']);
    expect(Object.fromEntries(instance.cursors)).toEqual({ a: 5, b: 0 });
    expect(h.topics.get('b')).toBeDefined();
    await settle();
    expect(stored()).toEqual([
      { group: 'g', clientId: 'c1', positions: { a: 5, b: 0 }, lastSeenAt: h.clock.now() },
    ]);
  });

  it('starts a new instance at offset 0 when the group reads from the earliest', () => {
    h.appendMany('a', 5);
    const instance = ledger.join(broadcasting('g', 'earliest'), 'c1', ['a']);
    expect(instance.cursors.get('a')).toBe(0);
  });

  it('keeps a known instance where it is and starts only its new topics', () => {
    h.appendMany('a', 5);
    const group = broadcasting();
    const first = ledger.join(group, 'c1', ['a']);
    first.cursors.set('a', 2);
    h.appendMany('b', 3);
    h.clock.advanceBy(1_000);
    const again = ledger.join(group, 'c1', ['a', 'b']);
    expect(again).toBe(first);
    expect(Object.fromEntries(again.cursors)).toEqual({ a: 2, b: 3 });
    expect(again.lastSeenAt).toBe(h.clock.now());
  });

  it('keeps each group’s instances apart, each instance with its own positions', () => {
    h.appendMany('a', 4);
    const one = ledger.join(broadcasting('g'), 'c1', ['a']);
    const two = ledger.join(broadcasting('g'), 'c2', ['a']);
    const other = ledger.join(broadcasting('h', 'earliest'), 'c1', ['a']);
    one.cursors.set('a', 1);
    expect(ledger.instancesOf('g')).toEqual([one, two]);
    expect(ledger.instancesOf('h')).toEqual([other]);
    expect(ledger.instancesOf('none')).toEqual([]);
    expect(ledger.get(one.key)).toBe(one);
    expect([...ledger.all()]).toEqual([one, two, other]);
    expect([two.cursors.get('a'), other.cursors.get('a')]).toEqual([4, 0]);
  });

  it('writes a changed position behind, once, after the write-behind window', async () => {
    const instance = ledger.join(broadcasting(), 'c1', ['a']);
    await settle();
    instance.cursors.set('a', 3);
    ledger.changed(instance);
    instance.cursors.set('a', 4);
    ledger.changed(instance);
    await h.timers.advanceBy(WRITE_BEHIND_MS - 1, settle);
    expect(stored()[0]?.positions).toEqual({ a: 0 });
    await h.timers.advanceBy(1, settle);
    expect(stored()[0]?.positions).toEqual({ a: 4 });
  });

  it('writes every changed instance at once on flush, and then nothing more', async () => {
    const group = broadcasting();
    const one = ledger.join(group, 'c1', ['a']);
    const two = ledger.join(group, 'c2', ['a']);
    one.cursors.set('a', 1);
    two.cursors.set('a', 2);
    ledger.changed(one);
    ledger.changed(two);
    ledger.flush();
    await settle();
    expect(stored().map((r) => r.positions.a)).toEqual([1, 2]);
    const writes: string[] = [];
    const put = h.store.putBroadcastInstance.bind(h.store);
    h.store.putBroadcastInstance = (record) => {
      writes.push(record.clientId);
      return put(record);
    };
    await h.timers.advanceBy(WRITE_BEHIND_MS, settle);
    expect(writes).toEqual([]);
  });

  it('counts an ended subscription as seen and writes that time behind', async () => {
    const instance = ledger.join(broadcasting(), 'c1', ['a']);
    h.clock.advanceBy(5_000);
    ledger.seen(instance);
    expect(instance.lastSeenAt).toBe(h.clock.now());
    await h.timers.advanceBy(WRITE_BEHIND_MS, settle);
    expect(stored()[0]?.lastSeenAt).toBe(instance.lastSeenAt);
  });

  it('forgets an instance unseen for its TTL when its group is joined, so it starts over (B1)', async () => {
    h.appendMany('a', 2);
    const group = broadcasting();
    const old = ledger.join(group, 'c1', ['a']);
    old.cursors.set('a', 1);
    h.clock.advanceBy(TTL_MS - 1);
    expect(ledger.join(group, 'c2', ['a']).cursors.get('a')).toBe(2);
    expect(ledger.get(old.key)).toBe(old);
    h.clock.advanceBy(1);
    h.appendMany('a', 3);
    const back = ledger.join(group, 'c1', ['a']);
    expect(back).not.toBe(old);
    expect(back.cursors.get('a')).toBe(5);
    expect(ledger.instancesOf('g').map((i) => i.clientId)).toEqual(['c2', 'c1']);
    await settle();
    expect(stored().find((r) => r.clientId === 'c1')?.positions).toEqual({ a: 5 });
  });

  it('never forgets an instance with a live subscription, however long unseen', () => {
    const group = broadcasting();
    const live = ledger.join(group, 'c1', ['a']);
    live.subscriptionIds.add(7);
    h.clock.advanceBy(TTL_MS * 10);
    ledger.join(group, 'c2', ['a']);
    expect(ledger.get(live.key)).toBe(live);
  });

  it('keeps an unseen instance that still holds a delivery until it is settled: its ack must work', () => {
    h.appendMany('a', 1);
    const group = broadcasting();
    const draining = ledger.join(group, 'c1', ['a']);
    draining.held.set(heldKey('a', 0), heldDelivery('a', 0));
    h.clock.advanceBy(TTL_MS * 2);
    ledger.join(group, 'c2', ['a']);
    expect(ledger.get(draining.key)).toBe(draining);
    draining.held.clear();
    ledger.join(group, 'c3', ['a']);
    expect(ledger.get(draining.key)).toBeUndefined();
  });

  it('sweeps every group for expired instances every minute, and deletes them from the store', async () => {
    const g = ledger.join(broadcasting('g'), 'c1', ['a']);
    const other = ledger.join(
      h.groups.put('h', { consumeMode: 'broadcasting', broadcastInstanceTtlMs: 30 * 60_000 }),
      'c1',
      ['a'],
    );
    // Sweeps run at every minute since load; the tenth finds `g`'s instance expired.
    await h.timers.advanceBy(TTL_MS - 1, settle);
    expect(ledger.get(g.key)).toBe(g);
    expect(stored()).toHaveLength(2);
    // A position changed just before: the flush must not write the forgotten instance back.
    ledger.changed(g);
    await h.timers.advanceBy(1, settle);
    expect(TTL_MS % SWEEP_MS).toBe(0);
    expect(ledger.get(g.key)).toBeUndefined();
    expect(ledger.instancesOf('g')).toEqual([]);
    expect(ledger.get(other.key)).toBe(other);
    await h.timers.advanceBy(WRITE_BEHIND_MS, settle);
    expect(stored().map((r) => r.group)).toEqual(['h']);
  });

  it('loads stored positions and last-seen times, dropping instances of deleted groups', async () => {
    const group = broadcasting();
    const instance = ledger.join(group, 'c1', ['a', 'b']);
    instance.cursors.set('a', 4);
    instance.held.set(heldKey('a', 2), heldDelivery('a', 2));
    ledger.changed(instance);
    // An instance whose group the store does not have (any more).
    void h.store.putBroadcastInstance({ group: 'gone', clientId: 'c1', positions: { a: 1 }, lastSeenAt: 0 });
    ledger.close();
    await settle();
    expect(stored()).toHaveLength(2);
    await h.restart();
    ledger = newLedger();
    ledger.load();
    const loaded = ledger.instancesOf('g');
    expect(loaded.map((i) => [i.clientId, Object.fromEntries(i.cursors), i.lastSeenAt])).toEqual([
      ['c1', { a: 2, b: 0 }, instance.lastSeenAt],
    ]);
    expect(loaded[0]?.group).toBe(h.groups.get('g'));
    expect(ledger.instancesOf('gone')).toEqual([]);
    await settle();
    expect(stored().map((r) => r.group)).toEqual(['g']);
  });

  it('forgets, on load, an instance that expired while the broker was down', async () => {
    ledger.join(broadcasting(), 'c1', ['a']);
    ledger.close();
    await h.restart();
    h.clock.advanceBy(TTL_MS);
    ledger = newLedger();
    ledger.load();
    expect(ledger.instancesOf('g')).toEqual([]);
    await settle();
    expect(stored()).toEqual([]);
  });

  it('stops sweeping and writes what changed on close', async () => {
    const instance = ledger.join(broadcasting(), 'c1', ['a']);
    instance.cursors.set('a', 9);
    ledger.changed(instance);
    ledger.close();
    expect(h.timers.nextDueAtMs()).toBeUndefined();
    await settle();
    expect(stored()[0]?.positions).toEqual({ a: 9 });
  });
});

describe('BroadcastLedger history', () => {
  const entry = (instance: BroadcastInstance, offset: number, result: HistoryRecord['result']) => ({
    group: instance.group.name,
    instance: instance.clientId,
    topic: 'a',
    offset,
    lease: 1,
    deliveryAttempt: 1,
    consumer: 'push' as const,
    deliveredAt: 0,
    settledAt: 0,
    result,
  });

  it('tells which messages stored before the restart an instance had consumed', async () => {
    const [m0, m1, m2] = h.appendMany('a', 3);
    const group = broadcasting('g', 'earliest');
    const mine = ledger.join(group, 'c1', ['a']);
    const theirs = ledger.join(group, 'c2', ['a']);
    void h.store.appendHistory('a-0', entry(mine, 0, 'committed'));
    void h.store.appendHistory('a-1', entry(mine, 1, 'released'));
    void h.store.appendHistory('a-2', entry(theirs, 2, 'failed'));
    ledger.close();
    await h.restart();
    ledger = newLedger();
    ledger.load();
    const [c1, c2] = ledger.instancesOf('g') as [BroadcastInstance, BroadcastInstance];
    const [late] = h.appendMany('a', 1);
    void h.store.appendHistory('a-3', entry(c1, 3, 'committed'));
    await settle();
    const consumed = (instance: BroadcastInstance) =>
      [m0, m1, m2, late].map((message) => message && ledger.consumedBeforeRestart(instance, message));
    // A release consumed nothing; a message stored in this life needs no look at the history.
    expect(consumed(c1)).toEqual([true, false, false, false]);
    expect(consumed(c2)).toEqual([false, false, true, false]);
  });

  it('records how a delivery left Inflight, under the instance, and nothing for other moves', async () => {
    const instance = ledger.join(broadcasting(), 'c1', ['a']);
    const delivery = heldDelivery('a', 4, 'inflight', 1_000);
    const inflight = delivery.state;
    const record = (event: Parameters<typeof broadcastTransition>[1]) => {
      const next = broadcastTransition(inflight, event);
      if (!next.ok) throw new Error(next.rejection.message);
      ledger.recordHistory(instance, delivery, inflight, next.state);
    };
    h.clock.advanceBy(500);
    record({ type: 'released', atMs: 1_500, lease: 1 });
    record({ type: 'failed', atMs: 1_500, lease: 1, reason: 'boom' });
    // Not from Inflight: nothing to record.
    ledger.recordHistory(instance, delivery, heldDelivery('a', 4, 'ready').state, inflight);
    await settle();
    const history = h.store.readHistory('a-4');
    expect(history).toHaveLength(1);
    expect(history[0]).toEqual({
      group: 'g',
      instance: 'c1',
      topic: 'a',
      offset: 4,
      deliveryAttempt: 1,
      consumer: 'push',
      consumerId: 'c1',
      deliveredAt: 1_000,
      settledAt: h.clock.now(),
      result: 'failed',
      reason: 'boom',
    });
  });

  it('tells retention which messages an instance holds, and moves positions behind the first offset up to it', async () => {
    h.appendMany('a', 10);
    const group = broadcasting('g', 'earliest');
    const behind = ledger.join(group, 'c1', ['a']);
    const ahead = ledger.join(group, 'c2', ['a']);
    ahead.cursors.set('a', 8);
    behind.held.set(heldKey('a', 0), heldDelivery('a', 0));
    expect(ledger.holds('a', 0)).toBe(true);
    expect(ledger.holds('a', 1)).toBe(false);

    expect([...ledger.skipExpired('a', 6)]).toEqual([['g', 6]]);
    expect(behind.cursors.get('a')).toBe(6);
    expect(ahead.cursors.get('a')).toBe(8);
    await settle();
    // Written in the same turn as the deletions: a restart never finds a position below the first offset.
    expect(stored().find((record) => record.clientId === 'c1')?.positions).toEqual({ a: 0 });
    behind.held.clear();
    ledger.skipExpired('a', 7);
    await settle();
    expect(stored().find((record) => record.clientId === 'c1')?.positions).toEqual({ a: 7 });
  });
});
