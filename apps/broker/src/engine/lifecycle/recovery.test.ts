import { CONSUMPTION_TIMEOUT_REASON } from '@ricochet/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeliveryAddress, DeliveryRecord } from '../../store/records.js';
import { BrokerMetrics } from '../broker-metrics.js';
import { parseSubscriptions } from '../dispatch/subscriptions.js';
import { type ClusteringParts, EngineHarness, START_MS } from '../engine-test-harness.test-support.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { RECOVERABLE_HORIZON_MS } from '../timers/scheduler.js';
import { recoverDeliveries } from './recovery.js';

const TIMEOUT_MS = 30_000;
/** Past the scheduler's horizon: these retries' entries are written (the kept ones have tests of their own). */
const RETRY_MS = RECOVERABLE_HORIZON_MS + 50_000;
/** Within the horizon: the scheduler keeps these retries' entries in memory only. */
const SOON_RETRY_MS = 2_000;

let h: EngineHarness;
let parts: ClusteringParts;
let group: GroupRuntime;

const at = (offset: number): DeliveryAddress => ({ group: 'g', topic: 't', offset });
const stateOf = (offset: number) => parts.records.get(at(offset))?.state;
const settle = () => h.committed();
const queued = () => group.readyQueue.take(100, () => true).map((ref) => ref.offset);

function build(): void {
  parts = h.clustering(new BrokerMetrics({ groupGauges: () => [] }));
  group = h.groups.require('g');
}

function leasePush(fields = {}): string {
  const message = h.append('t', fields);
  const address = at(message.offset);
  return (
    parts.leaseGrant.toPush(group, { address, message, record: undefined }, 1, 'c1')?.receiptHandle ?? ''
  );
}

function leaseSimple(invisibleMs: number, fields = {}): string {
  const message = h.append('t', fields);
  const address = at(message.offset);
  return (
    parts.leaseGrant.toSimple(group, { address, message, record: undefined }, invisibleMs, 's1')
      ?.receiptHandle ?? ''
  );
}

/** Write what is in memory, stop, reopen the store, and recover as the engine's start does. */
async function restart(beforeRecovery: () => Promise<void> = async () => {}): Promise<void> {
  parts.records.flush();
  await h.committed();
  parts.scheduler.stop();
  parts.pushLeases.stop();
  await h.restart();
  await beforeRecovery();
  build();
  recoverDeliveries({
    clock: h.clock,
    store: h.store,
    groups: h.groups,
    applier: parts.applier,
    settlement: parts.settlement,
    dueEvents: parts.dueEvents,
    scheduler: parts.scheduler,
  });
}

async function history(messageId: string): Promise<string[]> {
  await h.committed();
  return h.store.readHistory(messageId).map((e) => `${e.result}${e.reason ? `:${e.reason}` : ''}`);
}

beforeEach(() => {
  h = new EngineHarness('recovery');
  h.groups.put('g', {
    consumptionTimeoutMs: TIMEOUT_MS,
    retryPolicy: { type: 'fixed', delayMs: RETRY_MS },
  });
  build();
});

afterEach(async () => {
  parts.scheduler.stop();
  parts.pushLeases.stop();
  await h.close();
});

describe('recoverDeliveries', () => {
  it('releases push deliveries whose sessions died, or times them out past their deadline (C2, P2)', async () => {
    leasePush();
    h.clock.advanceBy(TIMEOUT_MS - 1_000);
    leasePush();
    // Down across the first delivery's deadline only.
    h.clock.advanceBy(2_000);
    await restart();
    expect(stateOf(0)).toMatchObject({ state: 'waitingRetry', failures: 1 });
    expect(stateOf(1)).toMatchObject({ state: 'ready', failures: 0, releases: 1 });
    expect(queued()).toEqual([1]);
    expect([group.inflight, group.waitingRetry]).toEqual([0, 1]);
    expect(await history('t-0')).toEqual([`timedOut:${CONSUMPTION_TIMEOUT_REASON}`]);
    expect(await history('t-1')).toEqual(['released']);
    const key = h.store.getDelivery(at(0))?.scheduleKey;
    expect(key).toEqual(['g', START_MS + TIMEOUT_MS + 1_000 + RETRY_MS, 't', 0]);
    // Due past the scheduler's horizon: the entry is written with the record.
    expect(key && h.store.getSchedule(key)).toEqual({ kind: 'retryDue' });
  });

  it('keeps simple leases: counted, ackable with the handle from before, expiring on time (S2)', async () => {
    const kept = leaseSimple(10_000);
    leaseSimple(10_000);
    await restart();
    expect(stateOf(0)?.state).toBe('inflight');
    expect(group.inflight).toBe(2);
    expect(parts.settlement.settle([{ receiptHandle: kept }], 'ack')).toEqual([]);
    await h.timers.advanceBy(10_000, settle);
    expect(stateOf(1)).toMatchObject({ state: 'ready', failures: 1 });
    expect([group.inflight, group.committed]).toEqual([0, 1]);
  });

  it('leaves a WaitingRetry on disk for the scheduler, and makes Ready one whose entry fired already', async () => {
    parts.settlement.settle([{ receiptHandle: leasePush(), reason: 'boom' }], 'nack');
    h.clock.advanceBy(RETRY_MS / 2);
    parts.settlement.settle([{ receiptHandle: leasePush(), reason: 'boom' }], 'nack');
    // Down until the second retry's time, with its entry taken as a broker whose Ready state of a
    // due retry waited in memory could leave it.
    h.clock.advanceBy(RETRY_MS);
    await restart(async () => {
      // The scheduler took this entry before the crash; the Ready state it led to was in memory.
      const taken = h.store.getDelivery(at(1))?.scheduleKey;
      if (taken) await h.store.deleteSchedule(taken);
    });
    expect(stateOf(0)?.state).toBe('waitingRetry');
    expect(stateOf(1)).toMatchObject({ state: 'ready', failures: 1 });
    expect(parts.records.get(at(1))).not.toHaveProperty('scheduleKey');
    expect(group.waitingRetry).toBe(1);
    expect(queued()).toEqual([1]);
    // Its retry is due too: the scheduler fires it at its first turn.
    await h.timers.advanceBy(0, settle);
    expect(stateOf(0)?.state).toBe('ready');
    expect(group.waitingRetry).toBe(0);
    expect(queued()).toEqual([0]);
  });

  it('does not look up the schedule entries of retries not due yet: pending retries cost one scan', async () => {
    for (const _ of [0, 1, 2])
      parts.settlement.settle([{ receiptHandle: leasePush(), reason: 'boom' }], 'nack');
    let lookups = 0;
    await restart(async () => {
      const getSchedule = h.store.getSchedule.bind(h.store);
      h.store.getSchedule = (key) => {
        lookups++;
        return getSchedule(key);
      };
    });
    expect(lookups).toBe(0);
    expect([0, 1, 2].map((offset) => stateOf(offset)?.state)).toEqual([
      'waitingRetry',
      'waitingRetry',
      'waitingRetry',
    ]);
    expect(group.waitingRetry).toBe(3);
  });

  describe('a retry due within the horizon, whose entry was kept in memory and never written', () => {
    beforeEach(() => {
      h.groups.put('g', {
        consumptionTimeoutMs: TIMEOUT_MS,
        retryPolicy: { type: 'fixed', delayMs: SOON_RETRY_MS },
      });
    });

    it('is scheduled again when its time is still to come, and fires on time', async () => {
      parts.settlement.settle([{ receiptHandle: leasePush(), reason: 'boom' }], 'nack');
      await h.committed();
      const key = h.store.getDelivery(at(0))?.scheduleKey;
      expect(key?.[1]).toBe(START_MS + SOON_RETRY_MS);
      // One durable write for the nack: the record, naming an entry the store never got.
      expect(key && h.store.getSchedule(key)).toBeUndefined();
      h.clock.advanceBy(SOON_RETRY_MS / 2);
      await restart();
      expect(stateOf(0)?.state).toBe('waitingRetry');
      expect(group.waitingRetry).toBe(1);
      expect(queued()).toEqual([]);
      await h.timers.advanceBy(SOON_RETRY_MS / 2 - 1, settle);
      expect(stateOf(0)?.state).toBe('waitingRetry');
      await h.timers.advanceBy(1, settle);
      expect(stateOf(0)).toMatchObject({ state: 'ready', failures: 1 });
      expect(group.waitingRetry).toBe(0);
      expect(queued()).toEqual([0]);
    });

    it('is Ready at once when its time passed while the broker was down', async () => {
      parts.settlement.settle([{ receiptHandle: leasePush(), reason: 'boom' }], 'nack');
      h.clock.advanceBy(SOON_RETRY_MS + 1);
      await restart();
      expect(stateOf(0)).toMatchObject({ state: 'ready', failures: 1 });
      expect(group.waitingRetry).toBe(0);
      expect(queued()).toEqual([0]);
    });

    it('is looked up in the store only when due within the horizon', async () => {
      parts.settlement.settle([{ receiptHandle: leasePush(), reason: 'boom' }], 'nack');
      h.groups.put('g', {
        consumptionTimeoutMs: TIMEOUT_MS,
        retryPolicy: { type: 'fixed', delayMs: RETRY_MS },
      });
      parts.settlement.settle([{ receiptHandle: leasePush(), reason: 'boom' }], 'nack');
      const looked: number[] = [];
      await restart(async () => {
        const getSchedule = h.store.getSchedule.bind(h.store);
        h.store.getSchedule = (key) => {
          looked.push(key[3]);
          return getSchedule(key);
        };
      });
      expect(looked).toEqual([0]);
      expect(group.waitingRetry).toBe(2);
    });
  });

  it('queues Ready records, discards terminal leftovers, skips records of unknown groups', async () => {
    h.appendMany('t', 3);
    const counters = { failures: 1, releases: 0, lease: 1 };
    const put = (address: DeliveryAddress, record: DeliveryRecord) =>
      void h.store.putDelivery(address, record);
    put(at(0), { consumer: 'push', messageId: 't-0', state: { state: 'ready', ...counters } });
    put(at(1), { consumer: 'push', messageId: 't-1', state: { state: 'commit', ...counters } });
    put(at(2), { consumer: 'simple', messageId: 't-2', state: { state: 'dlq', reason: 'x', ...counters } });
    const foreign = { ...at(0), group: 'gone' };
    put(foreign, { consumer: 'push', messageId: 't-0', state: { state: 'ready', ...counters } });
    await restart();
    expect(queued()).toEqual([0]);
    await h.committed();
    expect(h.store.getDelivery(at(1))).toBeUndefined();
    expect(h.store.getDelivery(at(2))).toBeUndefined();
    expect(h.store.getDelivery(foreign)).toBeDefined();
    expect([group.inflight, group.waitingRetry, group.committed, group.deadLettered]).toEqual([0, 0, 0, 0]);
  });

  it("queues a stored Ready that was delivered before ahead of those never delivered (P3's order)", async () => {
    h.appendMany('t', 3);
    const put = (offset: number, counters: { failures: number; releases: number; lease: number }) =>
      void h.store.putDelivery(at(offset), {
        consumer: 'push',
        messageId: `t-${offset}`,
        state: { state: 'ready', ...counters },
      });
    // A delay message admitted, a message redriven from the DLQ (attempts given back), a release.
    put(0, { failures: 0, releases: 0, lease: 0 });
    put(1, { failures: 0, releases: 0, lease: 3 });
    put(2, { failures: 0, releases: 1, lease: 1 });
    await restart();
    expect(group.readyQueue.againSize).toBe(1);
    expect(queued()).toEqual([2, 0, 1]);
  });

  it('keeps counters of terminal arrivals and derives the rest from the records', async () => {
    parts.settlement.settle([{ receiptHandle: leasePush() }], 'ack');
    parts.settlement.settle([{ receiptHandle: leasePush(), reason: 'boom' }], 'nack');
    leaseSimple(60_000);
    parts.applier.flushTurn();
    expect([group.committed, group.waitingRetry, group.inflight]).toEqual([1, 1, 1]);
    await restart();
    expect([group.committed, group.waitingRetry, group.inflight, group.deadLettered]).toEqual([1, 1, 1, 0]);
  });

  it('holds the FIFO message group of a head still leased or waiting, so later ones wait (P5)', async () => {
    h.groups.put('g', {
      fifo: true,
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: RETRY_MS },
    });
    leaseSimple(60_000, { messageGroup: 'a' });
    parts.settlement.settle([{ receiptHandle: leasePush({ messageGroup: 'b' }), reason: 'boom' }], 'nack');
    h.appendMany('t', 2, (i) => ({ messageGroup: i === 0 ? 'a' : 'b' }));
    group.cursors.set('t', 2);
    h.groups.saveCursor(group, 't');
    await restart();
    const subscriptions = parseSubscriptions({ t: '*' });
    expect(parts.readySource.take(group, subscriptions, 10)).toEqual([]);
    expect(queued()).toEqual([2, 3]);
  });
});
