import { DEAD_LETTERED_BY_CONSUMER_REASON } from '@ricochet/core';
import { BrokerError, type DeliveredMessage } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BrokerMetrics } from '../broker-metrics.js';
import { EngineHarness, turns } from '../engine-test-harness.test-support.js';
import { decodeReceiptHandle, encodeReceiptHandle } from '../lifecycle/receipt-handle.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { BroadcastDispatch } from './broadcast-dispatch.js';

const TIMEOUT_MS = 30_000;

let h: EngineHarness;
let metrics: BrokerMetrics;
let dispatch: BroadcastDispatch;
let group: GroupRuntime;
/** Per subscription id, what its sink was handed, in order. */
let received: Map<number, DeliveredMessage[]>;

function start(): void {
  metrics = new BrokerMetrics({ groupGauges: () => [] });
  let lastId = 0;
  dispatch = new BroadcastDispatch({
    store: h.store,
    clock: h.clock,
    timers: h.timers,
    topics: h.topics,
    groups: h.groups,
    metrics,
    applier: h.applier(metrics).applier,
    nextSubscriptionId: () => ++lastId,
  });
  dispatch.load();
  received = new Map();
  group = h.groups.put('g', {
    consumeMode: 'broadcasting',
    startFrom: 'earliest',
    consumptionTimeoutMs: TIMEOUT_MS,
  });
}

async function subscribe(clientId: string | undefined, credits = 100, topics = { a: '*' }): Promise<number> {
  const id = dispatch.subscribe(group, {
    subscriptions: topics,
    maxCachedMessages: credits,
    clientId,
    sink: (subscriptionId, messages) =>
      received.set(subscriptionId, [...(received.get(subscriptionId) ?? []), ...messages]),
  });
  await turns();
  return id;
}

const ids = (id: number) => (received.get(id) ?? []).map((m) => m.messageId);
const handles = (id: number) => (received.get(id) ?? []).map((m) => m.receiptHandle);
const items = (receiptHandles: readonly string[]) =>
  receiptHandles.map((receiptHandle) => ({ receiptHandle }));
const settleStore = () => h.committed();

async function counter(name: string): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  const values = (await metric?.get())?.values ?? [];
  return values.find((value) => value.labels.group === 'g')?.value ?? 0;
}

/** The instance's history results for a message, after the writes commit. */
async function results(messageId: string): Promise<string[]> {
  await h.committed();
  return h.store
    .readHistory(messageId)
    .map((e) => `${e.instance}:${e.result}${e.reason ? `:${e.reason}` : ''}`);
}

beforeEach(() => {
  h = new EngineHarness('bdispatch');
  start();
});

afterEach(async () => {
  dispatch.close();
  await h.close();
});

describe('BroadcastDispatch', () => {
  it('refuses a consumer without a clientId, or with one too long for a receipt handle (B1)', async () => {
    const refusal = (clientId: string | undefined) => {
      try {
        dispatch.subscribe(group, {
          subscriptions: { a: '*' },
          maxCachedMessages: 1,
          clientId,
          sink: () => {},
        });
      } catch (error) {
        return error;
      }
      return undefined;
    };
    expect(refusal(undefined)).toMatchObject({ errorName: 'BAD_REQUEST', details: { group: 'g' } });
    // 165 bytes of UTF-8 at most: 83 two-byte characters are 166.
    expect(refusal('é'.repeat(83))).toBeInstanceOf(BrokerError);
    expect(refusal(`${'é'.repeat(82)}a`)).toBeUndefined();
    expect(() =>
      dispatch.subscribe(group, {
        subscriptions: { a: 'x ||' },
        maxCachedMessages: 1,
        clientId: 'c9',
        sink: () => {},
      }),
    ).toThrow(BrokerError);
    expect(dispatch.instancesOf('g').map((i) => i.clientId)).toEqual([`${'é'.repeat(82)}a`]);
  });

  it('delivers every message to every instance, in log order, as attempt 1', async () => {
    h.appendMany('a', 3);
    const one = await subscribe('c1');
    const two = await subscribe('c2');
    expect(ids(one)).toEqual(['a-0', 'a-1', 'a-2']);
    expect(ids(two)).toEqual(['a-0', 'a-1', 'a-2']);
    expect(received.get(one)?.map((m) => m.deliveryAttempt)).toEqual([1, 1, 1]);
    expect(decodeReceiptHandle(handles(two)[1] ?? '')).toEqual({
      kind: 'broadcast',
      group: 'g',
      clientId: 'c2',
      topic: 'a',
      offset: 1,
      lease: 1,
    });
    expect(group.inflight).toBe(6);
    expect(await counter('ricochet_messages_delivered_total')).toBe(6);
  });

  it('hands out no more than the credit, and the rest when credit comes', async () => {
    h.appendMany('a', 5);
    const id = await subscribe('c1', 2);
    expect(ids(id)).toEqual(['a-0', 'a-1']);
    expect(dispatch.credit(id, 2)).toBe(true);
    await turns();
    expect(ids(id)).toEqual(['a-0', 'a-1', 'a-2', 'a-3']);
    expect(dispatch.credit(999, 2)).toBe(false);
  });

  it('shares one instance’s messages among its connections, each message to one of them', async () => {
    h.appendMany('a', 4);
    const first = await subscribe('c1', 1);
    const second = await subscribe('c1', 10);
    expect(dispatch.instancesOf('g')).toHaveLength(1);
    expect([...ids(first), ...ids(second)].sort()).toEqual(['a-0', 'a-1', 'a-2', 'a-3']);
    expect(ids(first)).toHaveLength(1);
  });

  it('delivers messages appended later when the group is woken, to subscribed instances only', async () => {
    const id = await subscribe('c1');
    const gone = await subscribe('c2');
    dispatch.unsubscribe(gone);
    h.appendMany('a', 2);
    group.wake();
    await turns();
    expect(ids(id)).toEqual(['a-0', 'a-1']);
    expect(ids(gone)).toEqual([]);
    expect(dispatch.unsubscribe(gone)).toBe(false);
  });

  it('commits an ack: counted, recorded for the instance, its position moved and written behind', async () => {
    h.appendMany('a', 2);
    const id = await subscribe('c1');
    expect(dispatch.settle(items(handles(id).slice(0, 1)), 'ack')).toEqual([]);
    expect(group.committed).toBe(1);
    expect(group.inflight).toBe(1);
    expect(await results('a-0')).toEqual(['c1:committed']);
    expect(await counter('ricochet_messages_acked_total')).toBe(1);
    expect(h.store.listGroupCounters()).toMatchObject([{ group: 'g', committed: 1 }]);
    await h.timers.advanceBy(1_000, settleStore);
    // a-1 is still held: the stored position stays at it.
    expect(h.store.listBroadcastInstances()[0]?.positions).toEqual({ a: 1 });
  });

  it('refuses, one failure per item, handles that are unknown, settled, or not broadcast ones', async () => {
    h.appendMany('a', 1);
    const id = await subscribe('c1');
    const [handle = ''] = handles(id);
    dispatch.settle(items([handle]), 'ack');
    const failures = dispatch.settle(
      items([
        'garbage',
        handle,
        encodeReceiptHandle({
          kind: 'broadcast',
          group: 'g',
          clientId: 'c1',
          topic: 'a',
          offset: 0,
          lease: 7,
        }),
      ]),
      'ack',
    );
    expect(failures.map(({ index, error }) => [index, error.errorName])).toEqual([
      [0, 'INVALID_RECEIPT_HANDLE'],
      [1, 'INVALID_RECEIPT_HANDLE'],
      [2, 'INVALID_RECEIPT_HANDLE'],
    ]);
    expect(group.committed).toBe(1);
  });

  it('records a failure and never retries it; a dead-letter is a failure too, with no DLQ (B1)', async () => {
    h.appendMany('a', 2);
    const id = await subscribe('c1');
    const [first = '', second = ''] = handles(id);
    expect(dispatch.settle([{ receiptHandle: first, reason: 'boom' }], 'nack')).toEqual([]);
    expect(dispatch.settle([{ receiptHandle: second, deadLetter: true }], 'nack')).toEqual([]);
    await turns();
    expect(ids(id)).toEqual(['a-0', 'a-1']);
    expect(await results('a-0')).toEqual(['c1:failed:boom']);
    expect(await results('a-1')).toEqual([`c1:failed:${DEAD_LETTERED_BY_CONSUMER_REASON}`]);
    expect([group.inflight, group.committed, group.deadLettered]).toEqual([0, 0, 0]);
    expect(await counter('ricochet_broadcast_failures_total')).toBe(2);
    expect(h.topics.get('%DLQ%g')).toBeUndefined();
  });

  it('delivers a released message again to the same instance only, with a new lease (C2)', async () => {
    h.appendMany('a', 2);
    const mine = await subscribe('c1');
    const theirs = await subscribe('c2');
    const [handle = ''] = handles(mine);
    expect(dispatch.settle(items([handle]), 'release')).toEqual([]);
    await turns();
    expect(ids(mine)).toEqual(['a-0', 'a-1', 'a-0']);
    expect(ids(theirs)).toEqual(['a-0', 'a-1']);
    const again = received.get(mine)?.[2];
    expect(again?.deliveryAttempt).toBe(1);
    expect(decodeReceiptHandle(again?.receiptHandle ?? '')?.lease).toBe(2);
    expect(await results('a-0')).toEqual(['c1:released']);
    expect(await counter('ricochet_messages_released_total')).toBe(1);
    // The old lease is gone.
    expect(dispatch.settle(items([handle]), 'ack')[0]?.error.errorName).toBe('INVALID_RECEIPT_HANDLE');
  });

  it('times out an unsettled delivery at the consumption timeout, recorded and not retried', async () => {
    h.appendMany('a', 1);
    const id = await subscribe('c1');
    await h.timers.advanceBy(TIMEOUT_MS - 1, settleStore);
    expect(group.inflight).toBe(1);
    await h.timers.advanceBy(1, settleStore);
    await turns();
    expect(group.inflight).toBe(0);
    expect(ids(id)).toEqual(['a-0']);
    expect(await results('a-0')).toEqual(['c1:timedOut:consumption timeout']);
    expect(dispatch.settle(items(handles(id)), 'ack')).toHaveLength(1);
    expect(await counter('ricochet_broadcast_failures_total')).toBe(1);
  });

  it('releases what an ended session held, for the instance’s next connection', async () => {
    h.appendMany('a', 2);
    const old = await subscribe('c1', 1);
    dispatch.endSubscriptions([old]);
    expect(group.inflight).toBe(0);
    const next = await subscribe('c1');
    expect(ids(next)).toEqual(['a-0', 'a-1']);
    expect(await results('a-0')).toEqual(['c1:released']);
  });

  it('resumes an instance after a restart where it stood, without what it had consumed (B1)', async () => {
    h.appendMany('a', 4);
    const id = await subscribe('c1', 3);
    dispatch.settle(items(handles(id).slice(0, 2)), 'ack');
    // A crash: the position (still at a-0) is not written; the history is.
    await h.restart();
    start();
    const again = await subscribe('c1');
    expect(ids(again)).toEqual(['a-2', 'a-3']);
  });

  it('delivers nothing once closed, and writes the instances’ positions', async () => {
    h.appendMany('a', 2);
    const id = await subscribe('c1', 1);
    dispatch.settle(items(handles(id)), 'ack');
    dispatch.close();
    h.append('a');
    group.wake();
    await turns();
    expect(ids(id)).toEqual(['a-0']);
    // Written by close, not by a write-behind timer: no time has passed.
    await h.committed();
    expect(h.store.listBroadcastInstances()[0]?.positions).toEqual({ a: 1 });
  });
});
