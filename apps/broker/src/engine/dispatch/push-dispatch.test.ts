import type { DeliveredMessage } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BrokerMetrics } from '../broker-metrics.js';
import { type ClusteringParts, EngineHarness, turns } from '../engine-test-harness.test-support.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { PushDispatch } from './push-dispatch.js';

let h: EngineHarness;
let parts: ClusteringParts;
let dispatch: PushDispatch;
let group: GroupRuntime;
/** Per subscription id, the frames its sink was handed, in order. */
let frames: Map<number, DeliveredMessage[][]>;

beforeEach(() => {
  h = new EngineHarness('push');
  parts = h.clustering(new BrokerMetrics({ groupGauges: () => [] }));
  let lastId = 0;
  dispatch = new PushDispatch({
    groups: h.groups,
    readySource: parts.readySource,
    leaseGrant: parts.leaseGrant,
    settlement: parts.settlement,
    pushLeases: parts.pushLeases,
    nextSubscriptionId: () => ++lastId,
    // A work clock that never moves: passes end by their message counts, so the tests are exact.
    workClock: () => 0,
  });
  group = h.groups.put('g', { startFrom: 'earliest' });
  frames = new Map();
});

afterEach(async () => {
  dispatch.close();
  parts.scheduler.stop();
  parts.pushLeases.stop();
  await h.close();
});

function subscribe(
  credits: number,
  consumerId = 'c1',
  subscriptions: Record<string, string> = { t: '*' },
): number {
  return dispatch.subscribe(group, {
    subscriptions,
    maxCachedMessages: credits,
    consumerId,
    sink: (id, messages) => frames.set(id, [...(frames.get(id) ?? []), messages]),
  });
}

const received = (id: number) => (frames.get(id) ?? []).flat();
const ids = (id: number) => received(id).map((m) => m.messageId);

describe('PushDispatch', () => {
  it('delivers up to the subscription credit, and more as credit is granted (P1)', async () => {
    h.appendMany('t', 5);
    const id = subscribe(2);
    await turns();
    expect(ids(id)).toEqual(['t-0', 't-1']);
    expect(group.inflight).toBe(2);
    // A settled delivery gives no credit back by itself: the client grants it.
    parts.settlement.settle([{ receiptHandle: received(id)[0]?.receiptHandle ?? '' }], 'ack');
    group.wake();
    await turns();
    expect(ids(id)).toHaveLength(2);
    dispatch.credit(id, 2);
    await turns();
    expect(ids(id)).toEqual(['t-0', 't-1', 't-2', 't-3']);
    dispatch.credit(99, 10);
  });

  it('spends a shared credit pool, which its holder refills, instead of credit of its own', async () => {
    h.appendMany('t', 5);
    const pool = { credits: 2 };
    const id = dispatch.subscribe(group, {
      subscriptions: { t: '*' },
      maxCachedMessages: 100,
      consumerId: 'c1',
      creditPool: pool,
      sink: (subscriptionId, messages) =>
        frames.set(subscriptionId, [...(frames.get(subscriptionId) ?? []), messages]),
    });
    await turns();
    expect(ids(id)).toEqual(['t-0', 't-1']);
    expect(pool.credits).toBe(0);
    // The holder refills the pool (another queue's subscription may have spent it meanwhile); a
    // grant of 0 makes the dispatcher look again.
    pool.credits = 1;
    dispatch.credit(id, 0);
    await turns();
    expect(ids(id)).toEqual(['t-0', 't-1', 't-2']);
    expect(pool.credits).toBe(0);
  });

  it("asks its lender for credit as late work only for messages Ready again, not a first delivery's (P3)", async () => {
    h.appendMany('t', 3);
    const wanted: boolean[] = [];
    const pool = { credits: 1 };
    dispatch.subscribe(group, {
      subscriptions: { t: '*' },
      maxCachedMessages: 1,
      consumerId: 'c1',
      creditPool: pool,
      lender: { wanted: (_, _ready, late) => wanted.push(late), returned: () => {} },
      sink: () => {},
    });
    await turns();
    // t-0 spent the loan; t-1 and t-2 are first deliveries: one want, not late.
    expect(wanted).toEqual([false]);
    // A first delivery Ready from the ready queue (a delay message that fell due, a FIFO message
    // parked behind its head, a redrive) is no late work: no second want.
    group.readyQueue.push({ topic: 't', offset: 1 }, 'first');
    group.wake();
    await turns();
    expect(wanted).toEqual([false]);
    // A message Ready again (a retry that fell due, a release) is: the lender serves it first.
    group.readyQueue.push({ topic: 't', offset: 0 }, 'again');
    group.wake();
    await turns();
    expect(wanted).toEqual([false, true]);
  });

  it('leases each delivery to its subscription and consumer, with one frame per pass', async () => {
    h.appendMany('t', 3);
    const id = subscribe(10, 'consumer-7');
    await turns();
    expect(frames.get(id)?.map((frame) => frame.length)).toEqual([3]);
    expect(received(id).map((m) => m.deliveryAttempt)).toEqual([1, 1, 1]);
    expect(parts.pushLeases.heldBy(id)).toHaveLength(3);
    expect(parts.records.get({ group: 'g', topic: 't', offset: 0 })?.consumerId).toBe('consumer-7');
  });

  it('delivers new messages when the group wakes', async () => {
    const id = subscribe(10);
    await turns();
    expect(ids(id)).toEqual([]);
    h.append('t');
    group.wake();
    await turns();
    expect(ids(id)).toEqual(['t-0']);
  });

  it('shares a group Ready messages across its subscriptions, each message once', async () => {
    h.appendMany('t', 64);
    const a = subscribe(100, 'a');
    const b = subscribe(100, 'b');
    await turns();
    expect([ids(a).length, ids(b).length]).toEqual([32, 32]);
    expect(new Set([...ids(a), ...ids(b)]).size).toBe(64);
  });

  it('starts each pass with the next subscription, so none is always served first', async () => {
    const a = subscribe(100, 'a');
    const b = subscribe(100, 'b');
    await turns();
    const firsts: string[] = [];
    for (let i = 0; i < 4; i++) {
      h.append('t');
      group.wake();
      await turns();
      firsts.push(ids(a).length > ids(b).length ? 'a' : ids(b).length > ids(a).length ? 'b' : '=');
    }
    // The last message went to whichever was served first; they alternate.
    expect(firsts[0]).not.toBe('=');
    expect(firsts[1]).toBe('=');
    expect(firsts[2]).toBe(firsts[0]);
    expect([ids(a).length, ids(b).length]).toEqual([2, 2]);
  });

  it('skips a subscription without credit and serves the others', async () => {
    h.appendMany('t', 3);
    const a = subscribe(1, 'a');
    const b = subscribe(10, 'b');
    await turns();
    expect(ids(a)).toHaveLength(1);
    expect(ids(b)).toHaveLength(2);
  });

  it('serves a subscription only the topics it subscribes', async () => {
    h.appendMany('t', 2);
    h.appendMany('u', 2);
    const id = subscribe(10, 'c1', { u: '*' });
    await turns();
    expect(ids(id)).toEqual(['u-0', 'u-1']);
  });

  it('hands out more than one pass worth over several turns, 256 messages a frame at most', async () => {
    h.appendMany('t', 300);
    const id = subscribe(1_000);
    await turns(1);
    expect(ids(id)).toHaveLength(256);
    await turns();
    expect(ids(id)).toHaveLength(300);
    expect(frames.get(id)?.map((frame) => frame.length)).toEqual([256, 44]);
  });

  it('catches up on a backlog of messages Ready again with passes four times as long', async () => {
    h.appendMany('t', 700);
    // 600 messages the group took long ago are Ready again (retries that fell due); 100 are new.
    group.cursors.set('t', 600);
    for (let offset = 0; offset < 600; offset++) group.readyQueue.push({ topic: 't', offset }, 'again');
    const id = subscribe(2_000);
    await turns(1);
    // More Ready again than one pass hands out (256): this pass may hand out up to 1,024.
    expect(ids(id)).toHaveLength(700);
    expect(ids(id).slice(598, 602)).toEqual(['t-598', 't-599', 't-600', 't-601']);
    expect(frames.get(id)?.map((frame) => frame.length)).toEqual([256, 256, 188]);
  });

  it('stops delivering to an unsubscribed subscription; its leases stay until settled', async () => {
    h.appendMany('t', 2);
    const id = subscribe(1);
    await turns();
    expect(dispatch.unsubscribe(id)).toBe(true);
    expect(dispatch.unsubscribe(id)).toBe(false);
    dispatch.credit(id, 5);
    group.wake();
    await turns();
    expect(ids(id)).toEqual(['t-0']);
    expect(parts.pushLeases.heldBy(id)).toHaveLength(1);
    expect(group.inflight).toBe(1);
  });

  it('releases what an ended session held, to the other subscriptions (C2)', async () => {
    h.appendMany('t', 3);
    const ended = subscribe(3, 'a');
    await turns();
    const other = subscribe(10, 'b');
    await turns();
    expect(ids(ended)).toHaveLength(3);
    dispatch.endSubscriptions([ended]);
    expect(parts.pushLeases.heldBy(ended)).toEqual([]);
    expect(group.inflight).toBe(0);
    await turns();
    expect(ids(other)).toEqual(['t-0', 't-1', 't-2']);
    expect(received(other).map((m) => m.deliveryAttempt)).toEqual([1, 1, 1]);
    await h.committed();
    expect(h.store.readHistory('t-0').map((e) => e.result)).toEqual(['released']);
  });

  it('dispatches nothing once closed', async () => {
    h.append('t');
    const id = subscribe(10);
    dispatch.close();
    await turns();
    group.wake();
    await turns();
    expect(ids(id)).toEqual([]);
  });
});
