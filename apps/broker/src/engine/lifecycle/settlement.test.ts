import { CONSUMPTION_TIMEOUT_REASON, DEAD_LETTERED_BY_CONSUMER_REASON } from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeliveryAddress } from '../../store/records.js';
import { BrokerMetrics } from '../broker-metrics.js';
import {
  type ClusteringParts,
  EngineHarness,
  groupMetric,
  START_MS,
} from '../engine-test-harness.test-support.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { decodeReceiptHandle, encodeReceiptHandle } from './receipt-handle.js';

const TIMEOUT_MS = 30_000;
const RETRY_MS = 5_000;

let h: EngineHarness;
let metrics: BrokerMetrics;
let parts: ClusteringParts;
let group: GroupRuntime;

const at = (offset: number): DeliveryAddress => ({ group: 'g', topic: 't', offset });
const items = (...receiptHandles: string[]) => receiptHandles.map((receiptHandle) => ({ receiptHandle }));
const errorOf = (failure: { error: BrokerError } | undefined) =>
  failure && { code: failure.error.code, message: failure.error.message };

/** Append a message and lease it to a push subscription; returns its receipt handle. */
function leasePush(): string {
  const message = h.append('t');
  const address = at(message.offset);
  const delivered = parts.leaseGrant.toPush(group, { address, message, record: undefined }, 1, 'c1');
  if (!delivered) throw new Error('not delivered');
  return delivered.receiptHandle;
}

/** Append a message and lease it to a simple consumer for `invisibleMs`. */
function leaseSimple(invisibleMs = 10_000): string {
  const message = h.append('t');
  const address = at(message.offset);
  const delivered = parts.leaseGrant.toSimple(
    group,
    { address, message, record: undefined },
    invisibleMs,
    's1',
  );
  if (!delivered) throw new Error('not delivered');
  return delivered.receiptHandle;
}

async function history(messageId: string): Promise<string[]> {
  await h.committed();
  return h.store.readHistory(messageId).map((e) => `${e.result}${e.reason ? `:${e.reason}` : ''}`);
}

const stateOf = (offset: number) => parts.records.get(at(offset))?.state;

beforeEach(() => {
  h = new EngineHarness('settlement');
  metrics = new BrokerMetrics({ groupGauges: () => [] });
  parts = h.clustering(metrics);
  group = h.groups.put('g', {
    consumptionTimeoutMs: TIMEOUT_MS,
    retryPolicy: { type: 'fixed', delayMs: RETRY_MS },
    maxRetries: 2,
  });
});

afterEach(async () => {
  parts.scheduler.stop();
  parts.pushLeases.stop();
  await h.close();
});

describe('Settlement', () => {
  it('refuses a malformed handle and an unknown one, indexed into the batch, and settles the rest', () => {
    const handle = leasePush();
    const unknown = encodeReceiptHandle({ kind: 'clustering', ...at(42), lease: 1 });
    const failures = parts.settlement.settle(items('garbage', handle, unknown), 'ack');
    expect(failures.map((f) => f.index)).toEqual([0, 2]);
    expect(failures.every((f) => f.error.errorName === 'INVALID_RECEIPT_HANDLE')).toBe(true);
    expect(failures[0]?.error.message).toMatch(/not a receipt handle/);
    expect(failures[1]?.error.message).toMatch(/unknown or its message is already settled/);
    expect(stateOf(0)).toBeUndefined();
    expect(group.committed).toBe(1);
  });

  it('answers an ack of a settled message as unknown, and commits it once', async () => {
    const handle = leasePush();
    expect(parts.settlement.settle(items(handle), 'ack')).toEqual([]);
    const [again] = parts.settlement.settle(items(handle), 'ack');
    expect(again?.error.code).toBe(410);
    expect(group.committed).toBe(1);
    expect(await history('t-0')).toEqual(['committed']);
    expect(await groupMetric(metrics, 'ricochet_messages_acked_total')).toBe(1);
  });

  it('refuses a stale lease (410) once the message was leased again', () => {
    const first = leasePush();
    expect(parts.settlement.settle(items(first), 'release')).toEqual([]);
    const [ref] = group.readyQueue.take(1, () => true);
    if (!ref) throw new Error('not queued');
    const message = h.topics.getMessage('t', 0);
    if (!message) throw new Error('no message');
    const again = parts.leaseGrant.toPush(
      group,
      { address: at(0), message, record: parts.records.get(at(0)) },
      1,
      'c2',
    );
    expect(decodeReceiptHandle(again?.receiptHandle ?? '')?.lease).toBe(2);
    const [stale] = parts.settlement.settle(items(first), 'ack');
    expect(stale?.error.code).toBe(410);
    expect(stale?.error.message).toMatch(/no longer valid: lease 1 was replaced by lease 2/);
    expect(stateOf(0)?.state).toBe('inflight');
  });

  it('a push nack waits for its retry with its reason and retryAfterMs; dead-letters on request', async () => {
    const first = leasePush();
    const second = leasePush();
    h.clock.advanceBy(100);
    const failures = parts.settlement.settle(
      [
        { receiptHandle: first, reason: 'boom', retryAfterMs: 700 },
        { receiptHandle: second, deadLetter: true },
      ],
      'nack',
    );
    expect(failures).toEqual([]);
    expect(stateOf(0)).toMatchObject({
      state: 'waitingRetry',
      retryAtMs: START_MS + 800,
      lastFailureReason: 'boom',
    });
    expect(stateOf(1)).toBeUndefined();
    expect(h.topics.getMessage('%DLQ%g', 0)?.deadLetter).toMatchObject({
      originOffset: 1,
      reason: DEAD_LETTERED_BY_CONSUMER_REASON,
    });
    expect(await history('t-0')).toEqual(['failed:boom']);
    expect([group.inflight, group.waitingRetry, group.deadLettered]).toEqual([0, 1, 1]);
  });

  it('names a nack without a reason FAILURE, and refuses a retryAfterMs out of range (400)', () => {
    const first = leasePush();
    const second = leasePush();
    const [refused] = parts.settlement.settle([{ receiptHandle: second, retryAfterMs: -1 }], 'nack');
    expect(refused?.error.errorName).toBe('BAD_REQUEST');
    expect(stateOf(1)?.state).toBe('inflight');
    expect(parts.settlement.settle(items(first), 'nack')).toEqual([]);
    expect(stateOf(0)).toMatchObject({ state: 'waitingRetry', lastFailureReason: 'FAILURE' });
  });

  it('a push release before the deadline: Ready again, no failure, recorded as released', async () => {
    const handle = leasePush();
    expect(parts.settlement.settle(items(handle), 'release')).toEqual([]);
    expect(stateOf(0)).toMatchObject({ state: 'ready', failures: 0, releases: 1 });
    expect(group.readyQueue.size).toBe(1);
    expect(parts.pushLeases.size).toBe(0);
    expect(await history('t-0')).toEqual(['released']);
    expect(await groupMetric(metrics, 'ricochet_messages_released_total')).toBe(1);
  });

  it('a push release at or after the deadline is the timeout it has become (P2)', async () => {
    const handle = leasePush();
    // The lease's timer has not fired yet: the release races it.
    h.clock.advanceBy(TIMEOUT_MS);
    expect(parts.settlement.settle(items(handle), 'release')).toEqual([]);
    expect(stateOf(0)).toMatchObject({
      state: 'waitingRetry',
      failures: 1,
      lastFailureReason: CONSUMPTION_TIMEOUT_REASON,
    });
    expect(group.readyQueue.size).toBe(0);
    expect([group.inflight, group.waitingRetry]).toEqual([0, 1]);
    expect(await history('t-0')).toEqual([`timedOut:${CONSUMPTION_TIMEOUT_REASON}`]);
    expect(await groupMetric(metrics, 'ricochet_messages_released_total')).toBe(0);
  });

  it('releases an ended session lease by address, past its deadline as a timeout', async () => {
    leasePush();
    leasePush();
    parts.settlement.release(at(0), 1);
    h.clock.advanceBy(TIMEOUT_MS);
    parts.settlement.release(at(1), 1);
    // A stale lease, an unknown message: nothing happens.
    parts.settlement.release(at(1), 7);
    parts.settlement.release(at(9), 1);
    expect(stateOf(0)?.state).toBe('ready');
    expect(stateOf(1)?.state).toBe('waitingRetry');
    expect(await history('t-1')).toEqual([`timedOut:${CONSUMPTION_TIMEOUT_REASON}`]);
  });

  it('release by address leaves a simple lease alone: it survives sessions (S2)', () => {
    leaseSimple();
    parts.settlement.release(at(0), 1);
    expect(stateOf(0)?.state).toBe('inflight');
  });

  it('releases a simple lease handed back unreceived: Ready at once, the attempt not counted', async () => {
    const handle = leaseSimple();
    expect(parts.settlement.settle(items(handle), 'release')).toEqual([]);
    expect(stateOf(0)).toMatchObject({ state: 'ready', failures: 0, releases: 1 });
    expect(await history('t-0')).toEqual(['released']);
  });

  it('refuses nack of a simple lease (400), but dead-letters one on request', async () => {
    const handle = leaseSimple();
    const [nack] = parts.settlement.settle(items(handle), 'nack');
    expect(nack?.error.code).toBe(400);
    expect(nack?.error.message).toMatch(/nack applies to push deliveries only/);
    expect(stateOf(0)?.state).toBe('inflight');
    expect(
      parts.settlement.settle([{ receiptHandle: handle, deadLetter: true, reason: 'bad' }], 'nack'),
    ).toEqual([]);
    expect(stateOf(0)).toBeUndefined();
    expect(h.topics.getMessage('%DLQ%g', 0)?.deadLetter).toMatchObject({ reason: 'bad', attempts: 1 });
    await h.committed();
    expect(h.store.countSchedule('g')).toBe(0);
  });

  it('acks a simple lease while live, refuses it at the deadline (S3)', async () => {
    const live = leaseSimple(1_000);
    const late = leaseSimple(1_000);
    expect(parts.settlement.settle(items(live), 'ack')).toEqual([]);
    h.clock.advanceBy(1_000);
    const [refused] = parts.settlement.settle(items(late), 'ack');
    expect(refused?.error.code).toBe(410);
    expect(refused?.error.message).toMatch(/expired/);
    expect(stateOf(1)?.state).toBe('inflight');
    // The acked lease is gone before it was ever written; the refused one is written by the flush.
    parts.records.flush();
    await h.committed();
    expect(h.store.getDelivery(at(0))).toBeUndefined();
    expect(h.store.getDelivery(at(1))?.state.state).toBe('inflight');
    expect(h.store.countSchedule('g')).toBe(1);
  });

  it('changes a simple lease invisibility: a new handle, the old one stops working (S4)', async () => {
    const old = leaseSimple(1_000);
    h.clock.advanceBy(400);
    const changed = parts.settlement.changeInvisibility(old, 5_000);
    expect(changed.messageId).toBe('t-0');
    expect(decodeReceiptHandle(changed.receiptHandle)).toEqual({ kind: 'clustering', ...at(0), lease: 2 });
    expect(stateOf(0)).toMatchObject({ state: 'inflight', lease: 2, leaseDeadlineMs: START_MS + 5_400 });
    await h.committed();
    expect(h.store.getDelivery(at(0))?.scheduleKey).toEqual(['g', START_MS + 5_400, 't', 0]);
    expect(h.store.countSchedule('g')).toBe(1);
    expect(() => parts.settlement.changeInvisibility(old, 5_000)).toThrow(/no longer valid/);
    expect(parts.settlement.settle(items(old), 'ack')[0]?.error.code).toBe(410);
    expect(parts.settlement.settle(items(changed.receiptHandle), 'ack')).toEqual([]);
  });

  it('refuses a change of invisibility of a push lease, a bad duration, a bad handle', () => {
    const pushed = leasePush();
    const leased = leaseSimple();
    const thrown = (handle: string, ms: number) => {
      try {
        parts.settlement.changeInvisibility(handle, ms);
      } catch (error) {
        return error instanceof BrokerError ? [error.code, error.errorName] : error;
      }
      return undefined;
    };
    expect(thrown(pushed, 1_000)).toEqual([400, 'BAD_REQUEST']);
    expect(thrown(leased, 1.5)).toEqual([400, 'BAD_REQUEST']);
    expect(thrown('nope', 1_000)).toEqual([410, 'INVALID_RECEIPT_HANDLE']);
    expect(thrown(encodeReceiptHandle({ kind: 'clustering', ...at(9), lease: 1 }), 1_000)).toEqual([
      410,
      'INVALID_RECEIPT_HANDLE',
    ]);
    expect(stateOf(0)).toMatchObject({ state: 'inflight', lease: 1 });
    expect(stateOf(1)).toMatchObject({ state: 'inflight', lease: 1 });
  });

  it('refuses a handle of a group that no longer exists as unknown', () => {
    const handle = encodeReceiptHandle({
      kind: 'clustering',
      group: 'gone',
      topic: 't',
      offset: 0,
      lease: 1,
    });
    expect(errorOf(parts.settlement.settle(items(handle), 'ack')[0])?.code).toBe(410);
  });
});
