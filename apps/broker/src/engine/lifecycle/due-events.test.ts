import { CONSUMPTION_TIMEOUT_REASON, LEASE_EXPIRED_REASON } from '@ricochet/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeliveryAddress, ScheduleKey } from '../../store/records.js';
import { BrokerMetrics } from '../broker-metrics.js';
import {
  type ClusteringOptions,
  type ClusteringParts,
  EngineHarness,
  START_MS,
} from '../engine-test-harness.test-support.js';
import { WRITE_BEHIND_MS } from '../model/delivery-records.js';
import type { GroupRuntime } from '../model/group-registry.js';

const TIMEOUT_MS = 30_000;
const RETRY_MS = 5_000;

let h: EngineHarness;
let parts: ClusteringParts;
let group: GroupRuntime;

const at = (offset: number): DeliveryAddress => ({ group: 'g', topic: 't', offset });
const settle = () => h.committed();
const stateOf = (offset: number) => parts.records.get(at(offset))?.state;
const queued = () => group.readyQueue.take(100, () => true).map((ref) => ref.offset);

function build(options: ClusteringOptions = {}, maxRetries = 2): void {
  parts = h.clustering(new BrokerMetrics({ groupGauges: () => [] }), options);
  group = h.groups.put('g', {
    consumptionTimeoutMs: TIMEOUT_MS,
    retryPolicy: { type: 'fixed', delayMs: RETRY_MS },
    maxRetries,
  });
}

function leasePush(): string {
  const message = h.append('t');
  const address = at(message.offset);
  return (
    parts.leaseGrant.toPush(group, { address, message, record: undefined }, 1, 'c1')?.receiptHandle ?? ''
  );
}

function leaseSimple(invisibleMs: number): string {
  const message = h.append('t');
  const address = at(message.offset);
  return (
    parts.leaseGrant.toSimple(group, { address, message, record: undefined }, invisibleMs, 's1')
      ?.receiptHandle ?? ''
  );
}

/** Lease a push delivery and fail it: WaitingRetry until now + RETRY_MS. */
function failPush(): void {
  const receiptHandle = leasePush();
  parts.settlement.settle([{ receiptHandle, reason: 'boom' }], 'nack');
}

async function history(messageId: string): Promise<string[]> {
  await h.committed();
  return h.store.readHistory(messageId).map((e) => `${e.result}${e.reason ? `:${e.reason}` : ''}`);
}

beforeEach(() => {
  h = new EngineHarness('due');
  build();
});

afterEach(async () => {
  parts.scheduler.stop();
  parts.pushLeases.stop();
  await h.close();
});

describe('DueEvents', () => {
  it('an expired simple lease makes the message Ready again, counted as a failure (S2)', async () => {
    leaseSimple(1_000);
    await timersAdvance(999);
    expect(stateOf(0)?.state).toBe('inflight');
    await timersAdvance(1);
    expect(stateOf(0)).toMatchObject({ state: 'ready', failures: 1 });
    expect(parts.records.get(at(0))).not.toHaveProperty('scheduleKey');
    expect(queued()).toEqual([0]);
    expect(group.inflight).toBe(0);
    expect(await history('t-0')).toEqual([`leaseExpired:${LEASE_EXPIRED_REASON}`]);
    expect(h.store.countSchedule('g')).toBe(0);
  });

  it('dead-letters a simple lease that expires on its last delivery (S5)', async () => {
    build({}, 0);
    leaseSimple(1_000);
    await timersAdvance(1_000);
    expect(stateOf(0)).toBeUndefined();
    expect(h.topics.getMessage('%DLQ%g', 0)?.deadLetter).toMatchObject({ reason: LEASE_EXPIRED_REASON });
    expect(group.deadLettered).toBe(1);
  });

  it('ignores a lease entry that is stale: the lease was replaced, or the message acked', async () => {
    const first = leaseSimple(1_000);
    const second = leaseSimple(1_000);
    const oldKey: ScheduleKey = ['g', START_MS + 1_000, 't', 0];
    h.clock.advanceBy(500);
    parts.settlement.changeInvisibility(first, 10_000);
    parts.settlement.settle([{ receiptHandle: second }], 'ack');
    h.clock.advanceBy(500);
    const stale = [
      { key: oldKey, entry: { kind: 'leaseExpiry', lease: 1 } as const },
      {
        key: ['g', START_MS + 1_000, 't', 1] as ScheduleKey,
        entry: { kind: 'leaseExpiry', lease: 1 } as const,
      },
    ];
    expect(parts.dueEvents.onDue('g', stale)).toBe(2);
    expect(stateOf(0)).toMatchObject({ state: 'inflight', lease: 2 });
    expect(stateOf(1)).toBeUndefined();
    expect(group.readyQueue.size).toBe(0);
    expect(await history('t-0')).toEqual([]);
  });

  it('a due retry makes a WaitingRetry message Ready (P3), once its entry fires', async () => {
    failPush();
    await timersAdvance(RETRY_MS - 1);
    expect(stateOf(0)?.state).toBe('waitingRetry');
    await timersAdvance(1);
    expect(stateOf(0)).toMatchObject({ state: 'ready', failures: 1 });
    expect(parts.records.get(at(0))).not.toHaveProperty('scheduleKey');
    expect([group.waitingRetry, group.inflight]).toEqual([0, 0]);
    expect(queued()).toEqual([0]);
  });

  it("reads a due retry's record from the cache of records written at once, not from the store", async () => {
    failPush();
    const reads: string[] = [];
    const { getDelivery, hasDelivery } = h.store;
    h.store.getDelivery = (address) => {
      reads.push(`get ${address.offset}`);
      return getDelivery.call(h.store, address);
    };
    h.store.hasDelivery = (address) => {
      reads.push(`has ${address.offset}`);
      return hasDelivery.call(h.store, address);
    };
    await timersAdvance(RETRY_MS);
    expect(stateOf(0)).toMatchObject({ state: 'ready', failures: 1 });
    expect(reads).toEqual([]);
  });

  it("queues a due retry ahead of delay messages that fell due before it (P3's order)", async () => {
    failPush();
    for (let i = 0; i < 3; i++) {
      const message = h.append('t', { deliverAt: START_MS + RETRY_MS - 1 });
      parts.applier.scheduleDelay(group, message);
    }
    await timersAdvance(RETRY_MS - 1);
    expect(group.readyQueue.size).toBe(3);
    await timersAdvance(1);
    expect(stateOf(0)).toMatchObject({ state: 'ready', failures: 1 });
    expect(group.readyQueue.againSize).toBe(1);
    expect(queued()).toEqual([0, 1, 2, 3]);
  });

  it("removes a due retry's entry at once and leaves its Ready state to the write-behind flush", async () => {
    failPush();
    await timersAdvance(RETRY_MS);
    // No flush has run: the store holds the WaitingRetry with its retry time passed and no entry,
    // which recovery makes Ready (the restart test below), as the flush would have.
    expect(h.store.countSchedule('g')).toBe(0);
    expect(h.store.getDelivery(at(0))?.state).toMatchObject({ state: 'waitingRetry', failures: 1 });
    expect(stateOf(0)).toMatchObject({ state: 'ready', failures: 1 });
    await timersAdvance(WRITE_BEHIND_MS);
    expect(h.store.getDelivery(at(0))?.state).toMatchObject({ state: 'ready', failures: 1 });
  });

  it('ignores a retry entry that is not the record one, or of a message without a record', () => {
    failPush();
    // Past the retry time, so only the key tells this entry from the record's.
    h.clock.advanceBy(RETRY_MS + 1_000);
    const entry = { kind: 'retryDue' } as const;
    const taken = parts.dueEvents.onDue('g', [
      { key: ['g', START_MS + RETRY_MS + 1_000, 't', 0], entry },
      { key: ['g', START_MS + 1, 't', 5], entry },
    ]);
    expect(taken).toBe(2);
    expect(stateOf(0)?.state).toBe('waitingRetry');
    expect(group.readyQueue.size).toBe(0);
  });

  it('takes no more entries than the ready queue has room for; the rest wait until resumed', async () => {
    build({ maxReadyQueuePerGroup: 2 });
    for (let i = 0; i < 3; i++) failPush();
    await timersAdvance(RETRY_MS);
    expect([0, 1, 2].map((offset) => stateOf(offset)?.state)).toEqual(['ready', 'ready', 'waitingRetry']);
    expect(parts.scheduler.pausedGroups).toBe(1);
    // The third waits with the scheduler (in memory: its retry is due within the horizon).
    expect(queued()).toEqual([0, 1]);
    parts.scheduler.resume('g');
    await timersAdvance(0);
    expect(stateOf(2)?.state).toBe('ready');
    expect(queued()).toEqual([2]);
  });

  it('drops the entries of a group that no longer exists', () => {
    const entry = { kind: 'retryDue' } as const;
    expect(parts.dueEvents.onDue('gone', [{ key: ['gone', 1, 't', 0], entry }])).toBe(1);
  });

  it('admits a delay message when its delayDue entry fires (T1)', async () => {
    const message = h.append('t', { deliverAt: START_MS + 2_000 });
    parts.applier.scheduleDelay(group, message);
    await timersAdvance(2_000);
    expect(stateOf(0)).toMatchObject({ state: 'ready', failures: 0 });
    expect(h.store.getDelivery(at(0))?.state.state).toBe('ready');
    expect(queued()).toEqual([0]);
  });

  it('a push lease past its deadline times out (P2): WaitingRetry, recorded as timedOut', async () => {
    leasePush();
    await timersAdvance(TIMEOUT_MS - 1);
    expect(stateOf(0)?.state).toBe('inflight');
    await timersAdvance(1);
    expect(stateOf(0)).toMatchObject({
      state: 'waitingRetry',
      failures: 1,
      retryAtMs: START_MS + TIMEOUT_MS + RETRY_MS,
      lastFailureReason: CONSUMPTION_TIMEOUT_REASON,
    });
    expect([group.inflight, group.waitingRetry]).toEqual([0, 1]);
    expect(parts.pushLeases.size).toBe(0);
    expect(await history('t-0')).toEqual([`timedOut:${CONSUMPTION_TIMEOUT_REASON}`]);
    await timersAdvance(RETRY_MS);
    expect(stateOf(0)?.state).toBe('ready');
  });

  it('a push lease that times out on its last delivery goes to the DLQ (P4)', async () => {
    build({}, 0);
    leasePush();
    await timersAdvance(TIMEOUT_MS);
    expect(stateOf(0)).toBeUndefined();
    expect(h.topics.getMessage('%DLQ%g', 0)?.deadLetter).toMatchObject({
      reason: CONSUMPTION_TIMEOUT_REASON,
      attempts: 1,
    });
  });

  it('ignores an expired push lease the record has moved on from', () => {
    leasePush();
    const lease = { address: at(0), lease: 2, deadlineMs: START_MS, subscriptionId: 1 };
    parts.dueEvents.onPushLeaseExpired(lease);
    parts.dueEvents.onPushLeaseExpired({ ...lease, address: at(3), lease: 1 });
    parts.dueEvents.onPushLeaseExpired({ ...lease, address: { ...at(0), group: 'gone' }, lease: 1 });
    expect(stateOf(0)).toMatchObject({ state: 'inflight', lease: 1 });
    expect(group.inflight).toBe(1);
  });

  it('makes Ready a WaitingRetry whose retry fell due before a restart', () => {
    failPush();
    const record = parts.records.get(at(0));
    if (!record) throw new Error('no record');
    parts.dueEvents.retryFellDueBeforeRestart(group, at(0), record);
    expect(parts.records.get(at(0))).toMatchObject({ state: { state: 'ready', failures: 1 } });
    expect(parts.records.get(at(0))).not.toHaveProperty('scheduleKey');
    expect(queued()).toEqual([0]);
  });
});

function timersAdvance(ms: number): Promise<void> {
  return h.timers.advanceBy(ms, settle);
}
