import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeliveryAddress } from '../../store/records.js';
import { BrokerMetrics } from '../broker-metrics.js';
import { type ClusteringParts, EngineHarness, START_MS } from '../engine-test-harness.test-support.js';
import { WRITE_BEHIND_MS } from '../model/delivery-records.js';
import type { GroupRuntime } from '../model/group-registry.js';
import type { ReadyCandidate } from './ready-source.js';
import { parseSubscriptions } from './subscriptions.js';

let h: EngineHarness;
let parts: ClusteringParts;
let group: GroupRuntime;

const at = (offset: number, topic = 't'): DeliveryAddress => ({ group: 'g', topic, offset });
const all = parseSubscriptions({ t: '*' });
const ids = (candidates: readonly ReadyCandidate[]) => candidates.map((c) => c.message.messageId);
const settle = () => h.committed();

function build(
  config: Parameters<EngineHarness['groups']['put']>[1] = {},
  maxReadyQueuePerGroup = 10_000,
): void {
  parts = h.clustering(new BrokerMetrics({ groupGauges: () => [] }), { maxReadyQueuePerGroup });
  group = h.groups.put('g', { startFrom: 'earliest', ...config });
}

function candidates(max = 10, subscriptions = all): ReadyCandidate[] {
  for (const topic of subscriptions.keys()) parts.readySource.ensureCursor(group, topic);
  return parts.readySource.take(group, subscriptions, max);
}

const take = (max = 10, subscriptions = all) => ids(candidates(max, subscriptions));

/** Lease a candidate the source handed out to a push consumer; returns its receipt handle. */
function lease(candidate: ReadyCandidate | undefined): string {
  if (!candidate) throw new Error('nothing to lease');
  return parts.leaseGrant.toPush(group, candidate, 1, 'c1')?.receiptHandle ?? '';
}

async function storedCursor(topic = 't'): Promise<number | undefined> {
  await h.committed();
  return h.store.listCursors().find((c) => c.group === 'g' && c.topic === topic)?.nextOffset;
}

beforeEach(() => {
  h = new EngineHarness('ready');
  build();
});

afterEach(async () => {
  parts.scheduler.stop();
  parts.pushLeases.stop();
  await h.close();
});

describe('ReadySource', () => {
  it('places a cursor once, per startFrom, and stores it', async () => {
    h.appendMany('t', 3);
    h.appendMany('u', 2);
    const latest = h.groups.put('late', {});
    parts.readySource.ensureCursor(latest, 'u');
    parts.readySource.ensureCursor(group, 't');
    h.append('t');
    parts.readySource.ensureCursor(group, 't');
    expect([latest.cursors.get('u'), group.cursors.get('t')]).toEqual([2, 0]);
    expect(await storedCursor()).toBe(0);
  });

  it('hands each log message out once, advancing the cursor, stored with the write-behind flush', async () => {
    h.appendMany('t', 5);
    expect(take(2)).toEqual(['t-0', 't-1']);
    expect(take(2)).toEqual(['t-2', 't-3']);
    expect(group.cursors.get('t')).toBe(4);
    expect(await storedCursor()).toBe(0);
    await h.timers.advanceBy(WRITE_BEHIND_MS, settle);
    expect(group.cursors.get('t')).toBe(4);
    expect(take(10)).toEqual(['t-4']);
    expect(take(10)).toEqual([]);
  });

  it('tells whether anything is Ready without taking it', () => {
    parts.readySource.ensureCursor(group, 't');
    expect(parts.readySource.hasReady(group, all)).toBe(false);
    h.append('t');
    expect(parts.readySource.hasReady(group, all)).toBe(true);
    take();
    expect(parts.readySource.hasReady(group, all)).toBe(false);
    group.readyQueue.push({ topic: 't', offset: 0 }, 'again');
    expect(parts.readySource.hasReady(group, all)).toBe(true);
  });

  it('skips messages a tag filter does not match; the cursor passes them', () => {
    h.appendMany('t', 5, (i) => (i === 4 ? {} : { tag: i % 2 === 0 ? 'red' : 'blue' }));
    expect(take(10, parseSubscriptions({ t: 'red' }))).toEqual(['t-0', 't-2']);
    expect(group.cursors.get('t')).toBe(5);
    expect(take(10)).toEqual([]);
  });

  it('stops a selective scan after 4 096 messages and goes on in the next call', async () => {
    h.appendMany('t', 4_100, (i) => ({ tag: i === 4_099 ? 'red' : 'blue' }));
    // The oldest of them are no longer in memory: they are read from the store once committed.
    await h.committed();
    const red = parseSubscriptions({ t: 'red' });
    expect(take(1, red)).toEqual([]);
    expect(group.cursors.get('t')).toBe(4_096);
    expect(take(1, red)).toEqual(['t-4099']);
  });

  it('starts each call with the next topic, so topics share fairly', () => {
    h.appendMany('a', 2);
    h.appendMany('b', 2);
    const both = parseSubscriptions({ a: '*', b: '*' });
    expect([take(1, both), take(1, both), take(1, both), take(1, both)].flat()).toEqual([
      'a-0',
      'b-0',
      'a-1',
      'b-1',
    ]);
  });

  it('hands out messages Ready again first, oldest first, and drops stale references', () => {
    h.appendMany('t', 4);
    h.appendMany('u', 1);
    const [first] = candidates(2);
    const resume = vi.spyOn(parts.scheduler, 'resume');
    group.readyQueue.push({ topic: 'u', offset: 0 }, 'again');
    group.readyQueue.push({ topic: 't', offset: 1 }, 'again');
    group.readyQueue.push({ topic: 't', offset: 0 }, 'again');
    group.readyQueue.push({ topic: 't', offset: 99 }, 'again');
    lease(first);
    // t-0 is Inflight meanwhile, t-99 does not exist: both references are stale.
    expect(take(10)).toEqual(['t-1', 't-2', 't-3']);
    expect(resume).toHaveBeenCalledWith('g');
    expect(group.readyQueue.take(10, () => true)).toEqual([{ topic: 'u', offset: 0 }]);
  });

  it('holds new messages back while a retry is due and has not fired: late work first', async () => {
    build({ retryPolicy: { type: 'fixed', delayMs: 1_000 } });
    h.appendMany('t', 3);
    const [failing] = candidates(1);
    parts.settlement.settle([{ receiptHandle: lease(failing), reason: 'boom' }], 'nack');
    // Due now, but the scheduler's timer has not fired yet (a busy broker).
    h.clock.advanceBy(1_000);
    expect(take(10)).toEqual([]);
    await h.timers.advanceBy(0, settle);
    expect(take(10)).toEqual(['t-0', 't-1', 't-2']);
  });

  it('parks a later message of a FIFO message group behind its head until the head is done (P5)', async () => {
    build({ fifo: true });
    h.appendMany('t', 4, (i) => ({ messageGroup: i === 2 ? 'y' : 'x' }));
    const heads = candidates();
    expect(ids(heads)).toEqual(['t-0', 't-2']);
    expect(parts.records.get(at(1))?.state.state).toBe('ready');
    expect(parts.records.get(at(3))?.state.state).toBe('ready');
    const head = lease(heads[0]);
    expect(take()).toEqual([]);
    parts.settlement.settle([{ receiptHandle: head }], 'ack');
    expect(take()).toEqual(['t-1']);
    expect(take()).toEqual([]);
  });

  it('parks FIFO messages in half the ready queue at most; the cursor waits before the rest (P5)', () => {
    build({ fifo: true }, 6);
    h.appendMany('t', 10, () => ({ messageGroup: 'x' }));
    const [head] = candidates();
    expect(head?.message.messageId).toBe('t-0');
    // Three parked (half of 6), the cursor stops at the first message that found no room.
    expect(group.readyQueue.size).toBe(3);
    expect(parts.records.get(at(4))).toBeUndefined();
    expect(group.cursors.get('t')).toBe(4);
    parts.settlement.settle([{ receiptHandle: lease(head) }], 'ack');
    const next = candidates();
    expect(ids(next)).toEqual(['t-1']);
    // The parked message taken made room: the scan went on from where it stopped, and stopped again.
    expect(group.readyQueue.size).toBe(3);
    expect(group.cursors.get('t')).toBe(5);
  });

  it('parks a delay message for the group until it is due (T1)', async () => {
    h.append('t', { deliverAt: START_MS + 1_000 });
    h.append('t', { deliverAt: START_MS });
    h.append('t');
    expect(take()).toEqual(['t-1', 't-2']);
    expect(group.cursors.get('t')).toBe(3);
    await h.committed();
    expect(h.store.getSchedule(['g', START_MS + 1_000, 't', 0])).toEqual({ kind: 'delayDue' });
    await h.timers.advanceBy(1_000, settle);
    expect(take()).toEqual(['t-0']);
  });

  it('after a restart, skips what a past life already tracks behind the stored cursor', async () => {
    h.appendMany('t', 3);
    const [durable, deferred, acked] = candidates(3);
    if (!durable || !deferred || !acked) throw new Error('not taken');
    // A failure's WaitingRetry is written at once; an Inflight state waits for the flush.
    parts.settlement.settle([{ receiptHandle: lease(durable), reason: 'boom' }], 'nack');
    lease(deferred);
    parts.settlement.settle([{ receiptHandle: lease(acked) }], 'ack');
    // A crash: neither the cursor nor the deferred Inflight state was flushed.
    await h.committed();
    parts.scheduler.stop();
    parts.pushLeases.stop();
    await h.restart();
    build();
    expect(await storedCursor()).toBe(0);
    expect(take()).toEqual(['t-1']);
  });
});
