import { initialReadyState, redrivenState } from '@ricochet/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeliveryAddress, DeliveryRecord } from '../../store/records.js';
import { BrokerMetrics } from '../broker-metrics.js';
import type { ReadyCandidate } from '../dispatch/ready-source.js';
import { type ClusteringParts, EngineHarness, START_MS } from '../engine-test-harness.test-support.js';
import type { GroupRuntime } from '../model/group-registry.js';
import { decodeReceiptHandle } from './receipt-handle.js';

const TIMEOUT_MS = 30_000;

let h: EngineHarness;
let parts: ClusteringParts;
let group: GroupRuntime;

const at = (offset: number): DeliveryAddress => ({ group: 'g', topic: 't', offset });

/** A new message of topic `t`, as the ready source offers it, with the record given. */
function candidate(record?: DeliveryRecord, fields = {}): ReadyCandidate {
  const message = h.append('t', fields);
  return { address: at(message.offset), message, record };
}

beforeEach(() => {
  h = new EngineHarness('grant');
  parts = h.clustering(new BrokerMetrics({ groupGauges: () => [] }));
  group = h.groups.put('g', { consumptionTimeoutMs: TIMEOUT_MS });
});

afterEach(async () => {
  parts.scheduler.stop();
  parts.pushLeases.stop();
  await h.close();
});

describe('LeaseGrant', () => {
  it('leases a first delivery to a push subscription for the group consumption timeout', () => {
    const delivered = parts.leaseGrant.toPush(
      group,
      candidate(undefined, { tag: 'red', keys: ['k'] }),
      4,
      'c1',
    );
    expect(delivered).toMatchObject({
      messageId: 't-0',
      topic: 't',
      offset: 0,
      deliveryAttempt: 1,
      tag: 'red',
      keys: ['k'],
    });
    expect(decodeReceiptHandle(delivered?.receiptHandle ?? '')).toEqual({
      kind: 'clustering',
      ...at(0),
      lease: 1,
    });
    expect(parts.records.get(at(0))).toMatchObject({
      consumer: 'push',
      consumerId: 'c1',
      state: { state: 'inflight', lease: 1, leaseDeadlineMs: START_MS + TIMEOUT_MS },
    });
    expect(parts.pushLeases.heldBy(4)).toEqual([
      { address: at(0), lease: 1, deadlineMs: START_MS + TIMEOUT_MS, subscriptionId: 4 },
    ]);
    expect(group.inflight).toBe(1);
  });

  it('records a delivery at the instant core leased it, however late the clock is read again', () => {
    // A loaded loop reads the clock milliseconds apart: here every read is 3 ms after the last.
    // The record's deliveredAt is the history's first delivery, and X2's budget counts from core's
    // firstDeliveredAtMs: the two are one instant, or the history shows a budget spent early.
    const read = h.clock.now.bind(h.clock);
    h.clock.now = () => {
      const nowMs = read();
      h.clock.advanceBy(3);
      return nowMs;
    };
    parts.leaseGrant.toPush(group, candidate(), 4, 'c1');
    const record = parts.records.get(at(0));
    const state = record?.state;
    expect(state?.state).toBe('inflight');
    expect(record?.deliveredAt).toBeDefined();
    expect(record?.deliveredAt).toBe(state?.state === 'inflight' ? state.firstDeliveredAtMs : undefined);
    expect(record?.deliveredAt).toBe(
      state?.state === 'inflight' ? state.leaseDeadlineMs - TIMEOUT_MS : undefined,
    );
  });

  it('leases to a simple consumer until now + its invisible duration, written with the next flush', async () => {
    const delivered = parts.leaseGrant.toSimple(group, candidate(), 2_000, 's1');
    expect(decodeReceiptHandle(delivered?.receiptHandle ?? '')).toEqual({
      kind: 'clustering',
      ...at(0),
      lease: 1,
    });
    parts.records.flush();
    await h.committed();
    expect(h.store.getDelivery(at(0))).toMatchObject({
      consumer: 'simple',
      consumerId: 's1',
      state: { state: 'inflight', leaseDeadlineMs: START_MS + 2_000 },
      scheduleKey: ['g', START_MS + 2_000, 't', 0],
    });
    expect(parts.pushLeases.size).toBe(0);
  });

  it('shows the attempt after the failures so far, and continues the lease numbers (P6, D2)', () => {
    const retried: DeliveryRecord = {
      consumer: 'push',
      messageId: 't-0',
      state: { state: 'ready', failures: 2, releases: 1, lease: 4 },
    };
    const pushed = parts.leaseGrant.toPush(group, candidate(retried), 1, 'c1');
    expect(pushed?.deliveryAttempt).toBe(3);
    expect(decodeReceiptHandle(pushed?.receiptHandle ?? '')?.lease).toBe(5);
    const redriven: DeliveryRecord = { consumer: 'push', messageId: 't-1', state: redrivenState(9) };
    const simple = parts.leaseGrant.toSimple(group, candidate(redriven), 1_000, 's1');
    expect(simple?.deliveryAttempt).toBe(1);
    expect(decodeReceiptHandle(simple?.receiptHandle ?? '')?.lease).toBe(10);
  });

  it('lets a simple consumer take on a Ready record a push consumer left, and the other way round', () => {
    const fromPush: DeliveryRecord = { consumer: 'push', messageId: 't-0', state: initialReadyState() };
    const fromSimple: DeliveryRecord = { consumer: 'simple', messageId: 't-1', state: initialReadyState() };
    expect(parts.leaseGrant.toSimple(group, candidate(fromPush), 1_000, 's1')).toBeDefined();
    expect(parts.leaseGrant.toPush(group, candidate(fromSimple), 1, 'c1')).toBeDefined();
    expect(parts.records.get(at(0))?.consumer).toBe('simple');
    expect(parts.records.get(at(1))?.consumer).toBe('push');
  });

  it('hands out nothing for a record that is no longer Ready, and changes nothing', () => {
    const first = candidate();
    parts.leaseGrant.toPush(group, first, 1, 'c1');
    const leased = parts.records.get(first.address);
    expect(parts.leaseGrant.toPush(group, { ...first, record: leased }, 2, 'c2')).toBeUndefined();
    expect(parts.leaseGrant.toSimple(group, { ...first, record: leased }, 1_000, 's1')).toBeUndefined();
    expect(parts.records.get(first.address)).toEqual(leased);
    expect(parts.pushLeases.heldBy(2)).toEqual([]);
    expect(group.inflight).toBe(1);
  });

  it('hands out nothing for an invalid invisible duration', async () => {
    expect(parts.leaseGrant.toSimple(group, candidate(), 0, 's1')).toBeUndefined();
    expect(parts.leaseGrant.toSimple(group, candidate(), 1.5, 's1')).toBeUndefined();
    expect(parts.records.get(at(0))).toBeUndefined();
    expect(group.inflight).toBe(0);
    await h.committed();
    expect(h.store.countSchedule('g')).toBe(0);
  });
});
