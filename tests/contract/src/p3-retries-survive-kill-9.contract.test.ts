import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { AdminApi } from './support/admin.js';
import { startChildBroker } from './support/child-broker.js';
import { startProducer } from './support/clients.js';
import { startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';

/** Fail `count` messages once on a broker process, then SIGKILL it; returns when each failed. */
async function failThenKill(
  dataDir: string,
  retryDelayMs: number,
  count: number,
): Promise<Map<string, number>> {
  const failedAt = new Map<string, number>();
  await using child = await startChildBroker(dataDir);
  const admin = new AdminApi(child.endpoint.replace(/^ws/, 'http'));
  await admin.putGroup('billing', {
    startFrom: 'earliest',
    retryPolicy: { type: 'fixed', delayMs: retryDelayMs },
  });
  const consumer = await startRecordingConsumer(
    child.endpoint,
    { group: 'billing', subscriptions: { orders: '*' } },
    (message) => {
      failedAt.set(message.messageId, performance.now());
      return ConsumeResult.FAILURE;
    },
  );
  const producer = await startProducer(child.endpoint);
  for (let i = 0; i < count; i++) await producer.send({ topic: 'orders', body: `m${i}` });
  await consumer.delivered(count);
  // close() waits until the broker answered every nack, i.e. until each failure is durable.
  await consumer.close();
  expect((await admin.getGroup('billing')).stats.waitingRetry).toBe(count);
  await child.kill9();
  await producer.close({ drainTimeoutMs: 0 });
  return failedAt;
}

describe('P3 across a crash: a broker killed with SIGKILL keeps every WaitingRetry message and fires it on schedule', () => {
  it('redelivers each retry after a restart, not before its delay ends', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-retry-crash-'));
    try {
      // Long enough for the restart and the check below on a loaded machine.
      const failedAt = await failThenKill(dataDir, 3_000, 5);
      await using broker = await startBroker({}, dataDir);
      // Polled: with queues spread, a broker counts the queues it owns, and right after the
      // restart some are still between owners (their retries counted by nobody yet: 0 of 5, once).
      await expect
        .poll(async () => (await broker.admin.getGroup('billing')).stats.waitingRetry, { timeout: 2_000 })
        .toBe(5);
      await using consumer = await startRecordingConsumer(
        broker.endpoint,
        { group: 'billing', subscriptions: { orders: '*' } },
        () => ConsumeResult.SUCCESS,
      );
      const deliveries = await consumer.delivered(5);
      for (const { message, atMs } of deliveries) {
        expect(message.deliveryAttempt).toBe(2);
        expect(atMs - (failedAt.get(message.messageId) ?? Number.POSITIVE_INFINITY)).toBeGreaterThanOrEqual(
          3_000,
        );
      }
      expect(new Set(deliveries.map((d) => d.message.messageId))).toEqual(new Set(failedAt.keys()));
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('fires a retry that fell due while the broker was down right after it starts', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-retry-crash-'));
    try {
      const failedAt = await failThenKill(dataDir, 1_000, 1);
      // The broker stays down until the retry is overdue: nothing but time can make it so.
      const failed = failedAt.values().next().value ?? 0;
      await delay(Math.max(0, failed + 1_000 - performance.now()));
      await using broker = await startBroker({}, dataDir);
      const startedAt = performance.now();
      await using consumer = await startRecordingConsumer(
        broker.endpoint,
        { group: 'billing', subscriptions: { orders: '*' } },
        () => ConsumeResult.SUCCESS,
      );
      const [delivery] = await consumer.delivered(1);
      expect(delivery?.message.deliveryAttempt).toBe(2);
      expect((delivery?.atMs ?? 0) - failed).toBeGreaterThanOrEqual(1_000);
      expect((delivery?.atMs ?? 0) - startedAt).toBeLessThan(2_000);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
