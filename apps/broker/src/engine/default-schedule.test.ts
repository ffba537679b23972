import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_PUSH_RETRY_POLICY, ManualClock } from '@ricochet/core';
import type { DeliveredMessage } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveBrokerConfig } from '../config.js';
import { openLmdbStore } from '../store/lmdb-store.js';
import { BrokerEngine } from './broker-engine.js';
import { ManualTimers } from './timers/manual-timers.test-support.js';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

let dir: string;
let engine: BrokerEngine;
let clock: ManualClock;
let timers: ManualTimers;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ricochet-schedule-'));
  clock = new ManualClock(Date.UTC(2026, 10, 21));
  timers = new ManualTimers(clock);
  const config = resolveBrokerConfig({ dataDir: dir });
  engine = new BrokerEngine({ store: openLmdbStore({ path: dir }), config, clock, timers });
  engine.start();
});

afterEach(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('the default push retry schedule, walked with an injected clock (P3, P4)', () => {
  it('redelivers after 10 s, 30 s, 1 m … 2 h, then dead-letters the 17th failure at once', async () => {
    const deliveries: { atMs: number; message: DeliveredMessage }[] = [];
    let notify: () => void = () => {};
    const nextDelivery = () => new Promise<void>((resolve) => (notify = resolve));
    let arrived = nextDelivery();
    await engine.putGroup('billing', { startFrom: 'earliest' });
    engine.subscribe({
      group: 'billing',
      subscriptions: { orders: '*' },
      maxCachedMessages: 1,
      consumerId: 'test',
      sink: (subscriptionId, messages) => {
        for (const message of messages) deliveries.push({ atMs: clock.now(), message });
        engine.credit(subscriptionId, messages.length);
        notify();
      },
    });
    const [receipt] = await engine.send([
      {
        messageId: '019aa6b1f2c07d3e8a41b5c6d7e8f901',
        topic: 'orders',
        body: new Uint8Array([1]),
        bornAt: clock.now(),
      },
    ]);
    expect(receipt?.ok).toBe(true);
    await arrived;

    // The seeds' table, written out again here on purpose: the test must not read the default it checks.
    const expectedGapsMs = [
      10 * SECOND,
      30 * SECOND,
      1 * MINUTE,
      2 * MINUTE,
      3 * MINUTE,
      4 * MINUTE,
      5 * MINUTE,
      6 * MINUTE,
      7 * MINUTE,
      8 * MINUTE,
      9 * MINUTE,
      10 * MINUTE,
      20 * MINUTE,
      30 * MINUTE,
      1 * HOUR,
      2 * HOUR,
    ];
    expect(expectedGapsMs).toEqual(DEFAULT_PUSH_RETRY_POLICY.delaysMs);

    for (const [retry, gapMs] of expectedGapsMs.entries()) {
      const current = deliveries.at(-1);
      if (!current) throw new Error('no delivery');
      expect(current.message.deliveryAttempt).toBe(retry + 1);
      arrived = nextDelivery();
      const failures = await engine.nack([
        { receiptHandle: current.message.receiptHandle, reason: `failure ${retry + 1}` },
      ]);
      expect(failures).toEqual([]);
      // Not a millisecond early: one ms before the step ends the message is still WaitingRetry.
      const seen = deliveries.length;
      await timers.advanceBy(gapMs - 1, async () => {});
      expect(engine.describeGroup('billing')?.stats.waitingRetry).toBe(1);
      expect(deliveries).toHaveLength(seen);
      await timers.advanceBy(1, async () => {});
      await arrived;
      expect(deliveries.at(-1)?.atMs).toBe(current.atMs + gapMs);
    }

    const last = deliveries.at(-1);
    expect(last?.message.deliveryAttempt).toBe(17);
    const failures = await engine.nack([
      { receiptHandle: last?.message.receiptHandle ?? '', reason: 'failure 17' },
    ]);
    expect(failures).toEqual([]);
    // P4: no 18th delivery; the message is in the DLQ at once.
    expect(engine.describeGroup('billing')?.stats).toMatchObject({ dlq: 1, waitingRetry: 0, inflight: 0 });
    const page = engine.listDeadLetters('billing', 0, 10);
    expect(page.messages[0]?.deadLetter).toMatchObject({
      originTopic: 'orders',
      attempts: 17,
      reason: 'failure 17',
    });
    expect(deliveries).toHaveLength(17);
    const totalMs = (deliveries.at(-1)?.atMs ?? 0) - (deliveries[0]?.atMs ?? 0);
    expect(totalMs).toBe(4 * HOUR + 45 * MINUTE + 40 * SECOND);
  });
});
