import {
  initialReadyState,
  type PushEvent,
  type PushState,
  pushTransition,
  type SimpleEvent,
  type SimpleState,
  simpleTransition,
} from '@ricochet/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { DeliveryAddress, DeliveryRecord } from '../../store/records.js';
import { BrokerMetrics } from '../broker-metrics.js';
import { EngineHarness, groupMetric, START_MS } from '../engine-test-harness.test-support.js';
import type { DeliveryRecords } from '../model/delivery-records.js';
import type { GroupRuntime } from '../model/group-registry.js';
import type { PushLeaseTable } from '../timers/push-lease-table.js';
import type { Scheduler } from '../timers/scheduler.js';
import type { DeliveryChange, EffectApplier } from './effect-applier.js';

const TIMEOUT_MS = 30_000;
const RETRY_MS = 5_000;

let h: EngineHarness;
let metrics: BrokerMetrics;
let applier: EffectApplier;
let records: DeliveryRecords;
let scheduler: Scheduler;
let pushLeases: PushLeaseTable;
let group: GroupRuntime;
let wakes: number;
let stopCounting: (() => void) | undefined;

const at = (offset: number, topic = 't'): DeliveryAddress => ({ group: 'g', topic, offset });

function build(config: Parameters<EngineHarness['groups']['put']>[1] = {}): void {
  metrics = new BrokerMetrics({ groupGauges: () => [] });
  ({ applier, records, scheduler, pushLeases } = h.applier(metrics));
  pushLeases.start(() => {});
  group = h.groups.put('g', {
    consumptionTimeoutMs: TIMEOUT_MS,
    retryPolicy: { type: 'fixed', delayMs: RETRY_MS },
    ...config,
  });
  wakes = 0;
  stopCounting?.();
  stopCounting = group.onWake(() => wakes++);
}

/** Core's push transition of the record at `address` (Ready when it has none), as a change. */
function push(address: DeliveryAddress, event: PushEvent, holder?: DeliveryChange['holder']): DeliveryChange {
  const before = records.get(address);
  const from = (before?.state ?? initialReadyState()) as PushState;
  const result = pushTransition(from, event, { ...group.config, random: () => 0.5 });
  if (!result.ok) throw new Error(result.rejection.message);
  const messageId = `${address.topic}-${address.offset}`;
  const base = { group, address, before, messageId, eventType: event.type, effects: result.effects };
  return { ...base, consumer: 'push', next: result.state, ...(holder ? { holder } : {}) };
}

function simple(
  address: DeliveryAddress,
  event: SimpleEvent,
  holder?: DeliveryChange['holder'],
): DeliveryChange {
  const before = records.get(address);
  const from = (before?.state ?? initialReadyState()) as SimpleState;
  const result = simpleTransition(from, event, group.config);
  if (!result.ok) throw new Error(result.rejection.message);
  const messageId = `${address.topic}-${address.offset}`;
  const base = { group, address, before, messageId, eventType: event.type, effects: result.effects };
  return { ...base, consumer: 'simple', next: result.state, ...(holder ? { holder } : {}) };
}

const now = () => h.clock.now();
const delivered = { type: 'delivered', atMs: START_MS, leaseDurationMs: TIMEOUT_MS } as const;
const holder = { consumerId: 'c1', subscriptionId: 7 };

/** Deliver a message of topic `t` to a push consumer; returns its address. */
function deliverPush(offset = 0, fields = {}): DeliveryAddress {
  h.append('t', fields);
  applier.apply(push(at(offset), delivered, holder));
  return at(offset);
}

async function history(messageId: string): Promise<string[]> {
  await h.committed();
  return h.store
    .readHistory(messageId)
    .map((e) => `${e.result}:${e.deliveryAttempt}${e.reason ? `:${e.reason}` : ''}`);
}

beforeEach(() => {
  h = new EngineHarness('applier');
  build();
});

afterEach(async () => {
  scheduler.stop();
  pushLeases.stop();
  await h.close();
});

describe('EffectApplier', () => {
  it('a push delivery: a write-behind record, a push lease and an inflight count', async () => {
    const address = deliverPush();
    expect(records.get(address)).toMatchObject({
      consumer: 'push',
      state: { state: 'inflight', lease: 1, leaseDeadlineMs: START_MS + TIMEOUT_MS },
      messageId: 't-0',
      consumerId: 'c1',
      deliveredAt: START_MS,
    });
    await h.committed();
    expect(h.store.getDelivery(address)).toBeUndefined();
    expect(pushLeases.heldBy(7)).toEqual([
      { address, lease: 1, deadlineMs: START_MS + TIMEOUT_MS, subscriptionId: 7 },
    ]);
    expect(group.inflight).toBe(1);
    expect(await groupMetric(metrics, 'ricochet_messages_delivered_total')).toBe(1);
    expect(h.store.countSchedule('g')).toBe(0);
    records.flush();
    await h.committed();
    expect(h.store.getDelivery(address)?.state.state).toBe('inflight');
  });

  it('a simple delivery: a record naming its leaseExpiry entry, both written behind together', async () => {
    h.append('t');
    applier.apply(
      simple(at(0), { type: 'delivered', atMs: now(), invisibleDurationMs: 2_000 }, { consumerId: 's1' }),
    );
    await h.committed();
    // Most leases are acked within the write-behind window and never reach the disk.
    expect(h.store.getDelivery(at(0))).toBeUndefined();
    expect(h.store.countSchedule('g')).toBe(0);
    records.flush();
    await h.committed();
    const stored = h.store.getDelivery(at(0));
    expect(stored).toMatchObject({
      consumer: 'simple',
      consumerId: 's1',
      state: { state: 'inflight', lease: 1 },
    });
    expect(stored?.scheduleKey).toEqual(['g', START_MS + 2_000, 't', 0]);
    expect(h.store.getSchedule(stored?.scheduleKey ?? ['g', 0, 't', 0])).toEqual({
      kind: 'leaseExpiry',
      lease: 1,
    });
    expect(pushLeases.size).toBe(0);
    expect(group.inflight).toBe(1);
  });

  it('a failure: the lease goes, WaitingRetry is durable naming its retryDue entry (kept in memory, due within the horizon), history records it', async () => {
    const address = deliverPush();
    h.clock.advanceBy(1_000);
    applier.apply(push(address, { type: 'failed', atMs: now(), lease: 1, reason: 'boom' }));
    await h.committed();
    const stored = h.store.getDelivery(address);
    const retryAtMs = START_MS + 1_000 + RETRY_MS;
    expect(stored).toMatchObject({ state: { state: 'waitingRetry', retryAtMs, failures: 1 } });
    expect(stored).not.toHaveProperty('consumerId');
    expect(stored?.scheduleKey).toEqual(['g', retryAtMs, 't', 0]);
    expect(h.store.getSchedule(['g', retryAtMs, 't', 0])).toBeUndefined();
    expect(pushLeases.size).toBe(0);
    expect([group.inflight, group.waitingRetry]).toEqual([0, 1]);
    expect(await history('t-0')).toEqual(['failed:1:boom']);
    const [entry] = h.store.readHistory('t-0');
    expect(entry).toMatchObject({
      consumer: 'push',
      consumerId: 'c1',
      deliveredAt: START_MS,
      settledAt: START_MS + 1_000,
    });
    expect(await groupMetric(metrics, 'ricochet_messages_retried_total')).toBe(1);
  });

  it('a due retry: Ready again, queued, the group woken once', async () => {
    const address = deliverPush();
    applier.apply(push(address, { type: 'failed', atMs: now(), lease: 1, reason: 'boom' }));
    h.clock.advanceBy(RETRY_MS);
    const waiting = records.get(address) as DeliveryRecord;
    const { scheduleKey: _fired, ...rest } = waiting;
    const change = push(address, { type: 'retryDue', atMs: now() });
    applier.apply({ ...change, before: rest });
    expect(records.get(address)).toMatchObject({ state: { state: 'ready', failures: 1 } });
    expect(records.get(address)).not.toHaveProperty('scheduleKey');
    expect(group.readyQueue.take(10, () => true)).toEqual([{ topic: 't', offset: 0 }]);
    expect(group.waitingRetry).toBe(0);
    expect(wakes).toBe(0);
    await Promise.resolve();
    expect(wakes).toBe(1);
  });

  it('a dead-letter: a DLQ copy with origin, attempts, reason and last lease; the record goes', async () => {
    build({ maxRetries: 0 });
    const address = deliverPush(0, { tag: 'red', properties: { k: 'v' } });
    applier.apply(push(address, { type: 'failed', atMs: now(), lease: 1, reason: 'fatal' }));
    expect(records.get(address)).toBeUndefined();
    const dlq = h.topics.getMessage('%DLQ%g', 0);
    expect(dlq).toMatchObject({
      messageId: 't-0',
      tag: 'red',
      properties: { k: 'v' },
      topic: '%DLQ%g',
      deadLetter: {
        group: 'g',
        originTopic: 't',
        originOffset: 0,
        attempts: 1,
        reason: 'fatal',
        lastLease: 1,
      },
    });
    expect([group.inflight, group.deadLettered]).toEqual([0, 1]);
    expect(pushLeases.size).toBe(0);
    expect(await history('t-0')).toEqual(['deadLettered:1:fatal']);
    expect(await groupMetric(metrics, 'ricochet_messages_dead_lettered_total')).toBe(1);
    await Promise.resolve();
    await h.committed();
    expect(h.store.listGroupCounters()).toEqual([{ group: 'g', committed: 0, deadLettered: 1, redriven: 0 }]);
    expect(h.store.getDelivery(address)).toBeUndefined();
  });

  it('an ack within the write-behind window never touches the delivery records on disk', async () => {
    const address = deliverPush();
    applier.apply(push(address, { type: 'succeeded', atMs: now(), lease: 1 }));
    records.flush();
    await h.committed();
    expect([...h.store.scanDeliveries()]).toEqual([]);
    expect([group.inflight, group.committed]).toEqual([0, 1]);
    expect(await history('t-0')).toEqual(['committed:1']);
    expect(await groupMetric(metrics, 'ricochet_messages_acked_total')).toBe(1);
  });

  it('releasing a FIFO key moves the message group on and wakes the group', async () => {
    build({ fifo: true });
    h.append('t', { messageGroup: 'm' });
    group.fifoGate.claim('t', 'm', 0);
    applier.apply(push(at(0), delivered, holder));
    expect(group.fifoGate.isBlocked('t', 'm', 1)).toBe(true);
    applier.apply(push(at(0), { type: 'succeeded', atMs: now(), lease: 1 }));
    expect(group.fifoGate.isBlocked('t', 'm', 1)).toBe(false);
    await Promise.resolve();
    expect(wakes).toBe(1);
  });

  it('keeps a FIFO head claimed while it waits for a retry, and queues it with its message group', () => {
    build({ fifo: true });
    h.append('t', { messageGroup: 'm' });
    group.fifoGate.claim('t', 'm', 0);
    applier.apply(push(at(0), delivered, holder));
    applier.apply(push(at(0), { type: 'released', atMs: now(), lease: 1 }));
    expect(group.fifoGate.isBlocked('t', 'm', 1)).toBe(true);
    expect(group.readyQueue.take(10, () => true)).toEqual([{ topic: 't', offset: 0, messageGroup: 'm' }]);
  });

  it('writes the counters once per turn, and at once on flushTurn', async () => {
    const writes = vi.spyOn(h.store, 'putGroupCounters');
    for (const offset of [0, 1, 2]) deliverPush(offset);
    for (const offset of [0, 1, 2])
      applier.apply(push(at(offset), { type: 'succeeded', atMs: now(), lease: 1 }));
    expect(writes).not.toHaveBeenCalled();
    await Promise.resolve();
    expect(writes).toHaveBeenCalledTimes(1);
    expect(writes).toHaveBeenLastCalledWith({ group: 'g', committed: 3, deadLettered: 0, redriven: 0 });
    deliverPush(3);
    applier.apply(push(at(3), { type: 'succeeded', atMs: now(), lease: 1 }));
    applier.flushTurn();
    expect(writes).toHaveBeenCalledTimes(2);
    await Promise.resolve();
    expect(writes).toHaveBeenCalledTimes(2);
  });

  it('wakes a group once for many messages made Ready in one turn', async () => {
    for (const offset of [0, 1, 2]) deliverPush(offset);
    for (const offset of [0, 1, 2])
      applier.apply(push(at(offset), { type: 'released', atMs: now(), lease: 1 }));
    await Promise.resolve();
    expect(wakes).toBe(1);
    expect(group.readyQueue.size).toBe(3);
    expect(await groupMetric(metrics, 'ricochet_messages_released_total')).toBe(3);
  });

  it('a simple change of invisibility replaces the schedule entry and keeps who holds it', async () => {
    h.append('t');
    applier.apply(
      simple(at(0), { type: 'delivered', atMs: now(), invisibleDurationMs: 2_000 }, { consumerId: 's1' }),
    );
    h.clock.advanceBy(500);
    applier.apply(
      simple(at(0), { type: 'invisibilityChanged', atMs: now(), lease: 1, invisibleDurationMs: 9_000 }),
    );
    await h.committed();
    const stored = h.store.getDelivery(at(0));
    expect(stored).toMatchObject({ consumerId: 's1', deliveredAt: START_MS, state: { lease: 2 } });
    expect(stored?.scheduleKey).toEqual(['g', START_MS + 9_500, 't', 0]);
    expect(h.store.getSchedule(['g', START_MS + 2_000, 't', 0])).toBeUndefined();
    expect(h.store.countSchedule('g')).toBe(1);
    expect(group.inflight).toBe(1);
  });

  it('adopts stored records: counts Inflight and WaitingRetry, holds their FIFO groups, queues Ready', () => {
    build({ fifo: true });
    h.appendMany('t', 3, (i) => ({ messageGroup: `m${i}` }));
    const inflight: DeliveryRecord = {
      consumer: 'simple',
      messageId: 't-0',
      state: {
        state: 'inflight',
        lease: 1,
        failures: 0,
        releases: 0,
        leaseDeadlineMs: 9e12,
        deliveryAttempt: 1,
      },
    };
    const waiting: DeliveryRecord = {
      consumer: 'push',
      messageId: 't-1',
      state: {
        state: 'waitingRetry',
        lease: 1,
        failures: 1,
        releases: 0,
        retryNumber: 1,
        retryDelayMs: 1,
        retryAtMs: 9e12,
      },
    };
    applier.adopt(group, at(0), inflight);
    applier.adopt(group, at(1), waiting);
    applier.adopt(group, at(2), { consumer: 'push', messageId: 't-2', state: initialReadyState() });
    expect([group.inflight, group.waitingRetry]).toEqual([1, 1]);
    expect(group.fifoGate.isBlocked('t', 'm0', 5)).toBe(true);
    expect(group.fifoGate.isBlocked('t', 'm1', 5)).toBe(true);
    expect(group.fifoGate.isBlocked('t', 'm2', 5)).toBe(false);
    expect(group.readyQueue.take(10, () => true)).toEqual([{ topic: 't', offset: 2, messageGroup: 'm2' }]);
  });

  it('admits a due delay message once: a durable Ready record, queued', async () => {
    h.append('t', { deliverAt: START_MS + 1_000 });
    expect(applier.admitDelayed(group, at(0))).toBe(true);
    expect(applier.admitDelayed(group, at(0))).toBe(false);
    expect(applier.admitDelayed(group, at(9))).toBe(false);
    await h.committed();
    expect(h.store.getDelivery(at(0))).toEqual({
      consumer: 'push',
      messageId: 't-0',
      state: initialReadyState(),
    });
    expect(group.readyQueue.take(10, () => true)).toEqual([{ topic: 't', offset: 0 }]);
  });

  it('schedules a delay message for the group, and parks a FIFO message behind its head', async () => {
    applier.scheduleDelay(group, h.append('t', { deliverAt: START_MS + 1_000 }));
    applier.scheduleDelay(group, h.append('t'));
    applier.parkBehindFifoHead(group, at(1), 't-1', 'm');
    await h.committed();
    expect(h.store.getSchedule(['g', START_MS + 1_000, 't', 0])).toEqual({ kind: 'delayDue' });
    expect(h.store.countSchedule('g')).toBe(1);
    expect(records.get(at(1))).toEqual({ consumer: 'push', messageId: 't-1', state: initialReadyState() });
    expect(group.readyQueue.take(10, () => true)).toEqual([{ topic: 't', offset: 1, messageGroup: 'm' }]);
  });

  it('redrives a DLQ copy once, for its own group, with leases after the last one', async () => {
    build({ maxRetries: 0 });
    const address = deliverPush();
    applier.apply(push(address, { type: 'failed', atMs: now(), lease: 1, reason: 'fatal' }));
    const copy = h.topics.getMessage('%DLQ%g', 0);
    if (!copy) throw new Error('no DLQ copy');
    const other = h.groups.put('other', {});
    expect(applier.redrive(other, copy)).toBe(false);
    h.clock.advanceBy(100);
    expect(applier.redrive(group, copy)).toBe(true);
    expect(applier.redrive(group, copy)).toBe(false);
    expect(applier.redrive(group, h.topics.getMessage('%DLQ%g', 0) ?? copy)).toBe(false);
    expect(h.topics.getMessage('%DLQ%g', 0)?.deadLetter?.redrivenAt).toBe(START_MS + 100);
    expect(records.get(address)).toMatchObject({ state: { state: 'ready', failures: 0, lease: 1 } });
    expect(group.redriven).toBe(1);
    expect(group.readyQueue.take(10, () => true)).toEqual([{ topic: 't', offset: 0 }]);
    applier.apply(push(address, delivered, holder));
    expect(records.get(address)?.state).toMatchObject({ lease: 2, deliveryAttempt: 1 });
    await Promise.resolve();
    await h.committed();
    expect(h.store.listGroupCounters()).toEqual([{ group: 'g', committed: 0, deadLettered: 1, redriven: 1 }]);
  });

  it('moves counters only for a broadcast transition, and discards a leftover record', async () => {
    applier.applyCounters(group, [
      { type: 'adjustCounter', counter: 'inflight', by: 1 },
      { type: 'requeue' },
      { type: 'adjustCounter', counter: 'committed', by: 1 },
    ]);
    expect([group.inflight, group.committed, group.readyQueue.size]).toEqual([1, 1, 0]);
    h.append('t');
    records.put(at(0), { consumer: 'push', messageId: 't-0', state: initialReadyState() }, 'now');
    applier.discard(at(0));
    await h.committed();
    expect(h.store.getDelivery(at(0))).toBeUndefined();
  });
});
