import { BrokerError, type DeliveredMessage } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BrokerMetrics } from '../broker-metrics.js';
import { type ClusteringParts, EngineHarness, START_MS } from '../engine-test-harness.test-support.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { type ReceiveRequest, SimpleConsumption } from './simple-consumption.js';

let h: EngineHarness;
let parts: ClusteringParts;
let simple: SimpleConsumption;
let group: GroupRuntime;

const settle = () => h.committed();
const ids = (messages: readonly DeliveredMessage[]) => messages.map((m) => m.messageId);

function request(overrides: Partial<ReceiveRequest> = {}): ReceiveRequest {
  return {
    group: 'g',
    subscriptions: { t: '*' },
    maxMessages: 10,
    invisibleDurationMs: 30_000,
    awaitDurationMs: 0,
    consumerId: 's1',
    ...overrides,
  };
}

/** A receive still waiting, with a way to look at its answer once it came. */
function pending(promise: Promise<DeliveredMessage[]>) {
  const state: { answer?: DeliveredMessage[] } = {};
  void promise.then((answer) => {
    state.answer = answer;
  });
  return state;
}

beforeEach(() => {
  h = new EngineHarness('simple');
  parts = h.clustering(new BrokerMetrics({ groupGauges: () => [] }));
  simple = new SimpleConsumption({
    groups: h.groups,
    readySource: parts.readySource,
    leaseGrant: parts.leaseGrant,
    timers: h.timers,
  });
  group = h.groups.put('g', { startFrom: 'earliest' });
});

afterEach(async () => {
  simple.close();
  parts.scheduler.stop();
  parts.pushLeases.stop();
  await h.close();
});

describe('SimpleConsumption', () => {
  it('leases up to maxMessages at once, each until now + its invisible duration (S2)', async () => {
    h.appendMany('t', 3);
    const messages = await simple.receive(request({ maxMessages: 2, invisibleDurationMs: 5_000 }));
    expect(ids(messages)).toEqual(['t-0', 't-1']);
    const record = parts.records.get({ group: 'g', topic: 't', offset: 0 });
    expect(record).toMatchObject({
      consumer: 'simple',
      consumerId: 's1',
      state: { leaseDeadlineMs: START_MS + 5_000 },
    });
    expect(ids(await simple.receive(request()))).toEqual(['t-2']);
    expect(group.inflight).toBe(3);
  });

  it('leases no more than a shared budget allows, and spends it (a receive spread over queues)', async () => {
    h.appendMany('t', 5);
    const budget = { remaining: 3, remainingBytes: Number.POSITIVE_INFINITY };
    expect(await simple.receive(request({ maxMessages: 10, budget }))).toHaveLength(3);
    expect(budget.remaining).toBe(0);
    expect(await simple.receive(request({ maxMessages: 10, budget }))).toEqual([]);
    expect(group.inflight).toBe(3);
  });

  it('keeps an answer within maxBytes, in order, and lets one larger message go alone', async () => {
    const mib = 1024 * 1024;
    h.appendMany('t', 4, () => ({ body: new Uint8Array(3 * mib) }));
    expect(ids(await simple.receive(request({ maxBytes: 7 * mib })))).toEqual(['t-0', 't-1']);
    expect(ids(await simple.receive(request({ maxBytes: 1 * mib })))).toEqual(['t-2']);
    expect(ids(await simple.receive(request({ maxBytes: 100 * mib })))).toEqual(['t-3']);
  });

  it('spends a shared budget of bytes, and lets only the first lease of a receive go past it', async () => {
    const mib = 1024 * 1024;
    h.appendMany('t', 3, () => ({ body: new Uint8Array(3 * mib) }));
    const budget = { remaining: 10, remainingBytes: 4 * mib };
    expect(ids(await simple.receive(request({ maxBytes: 4 * mib, budget })))).toEqual(['t-0']);
    expect(budget.remainingBytes).toBeLessThan(mib);
    // What is left of the bytes holds no whole message, and this receive already leased one.
    expect(await simple.receive(request({ maxBytes: 4 * mib, budget }))).toEqual([]);
  });

  it('answers an empty receive at once when it may not wait', async () => {
    expect(await simple.receive(request())).toEqual([]);
  });

  it('serves a waiting receive when the group wakes with a message (long polling)', async () => {
    const waiting = pending(simple.receive(request({ awaitDurationMs: 20_000 })));
    await h.timers.advanceBy(1_000, settle);
    expect(waiting.answer).toBeUndefined();
    h.append('t');
    group.wake();
    await settle();
    expect(ids(waiting.answer ?? [])).toEqual(['t-0']);
  });

  it('keeps waiting through a wake-up that brings nothing for it', async () => {
    const waiting = pending(
      simple.receive(request({ awaitDurationMs: 20_000, subscriptions: { t: 'red' } })),
    );
    h.append('t', { tag: 'blue' });
    group.wake();
    await settle();
    expect(waiting.answer).toBeUndefined();
    h.append('t', { tag: 'red' });
    group.wake();
    await settle();
    expect(ids(waiting.answer ?? [])).toEqual(['t-1']);
  });

  it('answers empty at the await deadline, after a last look', async () => {
    const empty = pending(simple.receive(request({ awaitDurationMs: 5_000 })));
    await h.timers.advanceBy(4_999, settle);
    expect(empty.answer).toBeUndefined();
    await h.timers.advanceBy(1, settle);
    expect(empty.answer).toEqual([]);
    // A message appended without a wake-up is still found at the deadline.
    const late = pending(simple.receive(request({ awaitDurationMs: 5_000 })));
    h.append('t');
    await h.timers.advanceBy(5_000, settle);
    expect(ids(late.answer ?? [])).toEqual(['t-0']);
  });

  it('serves waiting receives oldest first; one that got nothing keeps waiting', async () => {
    const first = pending(simple.receive(request({ awaitDurationMs: 20_000, maxMessages: 1 })));
    const second = pending(simple.receive(request({ awaitDurationMs: 20_000, maxMessages: 1 })));
    h.append('t');
    group.wake();
    await settle();
    expect(ids(first.answer ?? [])).toEqual(['t-0']);
    expect(second.answer).toBeUndefined();
    h.append('t');
    group.wake();
    await settle();
    expect(ids(second.answer ?? [])).toEqual(['t-1']);
  });

  it('answers an aborted receive with nothing, and does not wait for an aborted one', async () => {
    const controller = new AbortController();
    const aborted = pending(simple.receive(request({ awaitDurationMs: 20_000, signal: controller.signal })));
    controller.abort();
    await settle();
    expect(aborted.answer).toEqual([]);
    // Its await timer went with it.
    expect(h.timers.nextDueAtMs()).toBeUndefined();
    expect(await simple.receive(request({ awaitDurationMs: 20_000, signal: controller.signal }))).toEqual([]);
    h.append('t');
    group.wake();
    expect(ids(await simple.receive(request()))).toEqual(['t-0']);
  });

  it('answers every waiting receive with nothing when it closes', async () => {
    const waiting = pending(simple.receive(request({ awaitDurationMs: 20_000 })));
    simple.close();
    await settle();
    expect(waiting.answer).toEqual([]);
  });

  it('refuses a broadcasting group (simple consumers consume clustering groups only)', async () => {
    h.groups.put('b', { consumeMode: 'broadcasting' });
    await expect(simple.receive(request({ group: 'b' }))).rejects.toMatchObject({
      errorName: 'BAD_REQUEST',
      details: { group: 'b' },
    });
    expect(() => simple.register('b', { t: '*' })).toThrow(BrokerError);
  });

  it('takes the group position at registration: startFrom latest skips what came before', async () => {
    h.groups.put('late', {});
    h.append('t');
    simple.register('late', { t: '*' });
    h.append('t');
    expect(ids(await simple.receive(request({ group: 'late' })))).toEqual(['t-1']);
  });

  it('refuses an invalid tag expression', async () => {
    await expect(simple.receive(request({ subscriptions: { t: 'a ||' } }))).rejects.toMatchObject({
      errorName: 'BAD_REQUEST',
    });
  });
});
