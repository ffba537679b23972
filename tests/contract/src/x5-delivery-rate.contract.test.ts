import { deliveryBurst } from '@ricochet/core';
import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { eventually, type RecordingPushConsumer, startRecordingConsumer } from './support/push.js';
import { startBroker, type TestBroker } from './support/test-broker.js';

/** X5's limit in these tests: fast enough to take ~2 s, slow enough that without it all would go at once. */
const LIMIT_PER_SECOND = 200;
const BURST = deliveryBurst(LIMIT_PER_SECOND);
/**
 * What the clients' receipt times may lag the broker's hand-out by: the broker and the clients
 * share this process's event loop, so a frame waits at most a few turns. 100 ms is 20 deliveries
 * at the limit; without the limit the same messages arrive within a few hundred ms, all 400.
 */
const RECEIPT_SLACK_MS = 100;

async function sendMany(broker: TestBroker, count: number): Promise<string[]> {
  await using producer = await startProducer(broker.endpoint);
  const sent = await Promise.all(
    Array.from({ length: count }, (_, i) => producer.send({ topic: 'orders', body: `order ${i}` })),
  );
  return sent.map((receipt) => receipt.messageId);
}

/** The most deliveries at any receipt times in a window of each length, against the bucket's bound. */
function worstExcess(receiptsMs: readonly number[]): number {
  const times = [...receiptsMs].sort((a, b) => a - b);
  let worst = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < times.length; i++) {
    for (let j = i; j < times.length; j++) {
      const elapsedMs = (times[j] ?? 0) - (times[i] ?? 0);
      const bound = BURST + (LIMIT_PER_SECOND * (elapsedMs + RECEIPT_SLACK_MS)) / 1_000;
      worst = Math.max(worst, j - i + 1 - bound);
    }
  }
  return worst;
}

describe('X5: a group receives at most maxDeliveriesPerSecond, first deliveries and retries together', () => {
  it('three push consumers share the limit; held messages wait without failing or spending an attempt', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', {
      startFrom: 'earliest',
      maxDeliveriesPerSecond: LIMIT_PER_SECOND,
      retryPolicy: { type: 'fixed', delayMs: 50 },
    });
    const ids = await sendMany(broker, 300);
    // Every third message fails its first delivery: its retry shares the same budget.
    const failsOnce = new Set(ids.filter((_, i) => i % 3 === 0));
    const verdict = (message: { messageId: string; deliveryAttempt: number }) =>
      failsOnce.has(message.messageId) && message.deliveryAttempt === 1
        ? ConsumeResult.FAILURE
        : ConsumeResult.SUCCESS;
    const consumers: RecordingPushConsumer[] = [];
    const startedAt = performance.now();
    for (let i = 0; i < 3; i++) {
      consumers.push(
        await startRecordingConsumer(
          broker.endpoint,
          { group: 'billing', subscriptions: { orders: '*' } },
          verdict,
        ),
      );
    }
    try {
      const stats = await eventually(
        () => broker.admin.getGroup('billing').then((group) => group.stats),
        (s) => s.committed === ids.length,
        20_000,
      );
      const elapsedMs = performance.now() - startedAt;
      const deliveries = consumers.flatMap((consumer) => consumer.deliveries);
      expect(deliveries).toHaveLength(ids.length + failsOnce.size);
      // Shared: every consumer took part.
      for (const consumer of consumers) expect(consumer.deliveries.length).toBeGreaterThan(0);
      // Held, not failed: nothing in the DLQ, and a message's attempt counts only its real failures.
      expect(stats).toMatchObject({ dlq: 0, waitingRetry: 0, inflight: 0 });
      for (const { message } of deliveries) {
        expect(message.deliveryAttempt).toBeLessThanOrEqual(failsOnce.has(message.messageId) ? 2 : 1);
      }
      // Never more in any window than the bucket's bound (burst + rate × elapsed).
      expect(worstExcess(deliveries.map((delivery) => delivery.atMs))).toBeLessThanOrEqual(0);
      // And so 400 deliveries took at least (400 - burst) / 200 s.
      expect(elapsedMs).toBeGreaterThanOrEqual(
        ((deliveries.length - BURST) * 1_000) / LIMIT_PER_SECOND - RECEIPT_SLACK_MS,
      );

      // Each broker exports the gauges of the queues it owns (with queues spread, not every broker
      // dispatched the group's messages): what a Prometheus scraping them all sees.
      const metrics = (
        await Promise.all(
          broker.everyAdmin.map(async (admin) => (await admin.fetch('GET', '/metrics')).text()),
        )
      ).join('\n');
      expect(metrics).toMatch(/^ricochet_group_max_deliveries_per_second\{group="billing"\} 200$/m);
      expect(metrics).toMatch(/^ricochet_group_delivery_rate_per_second\{group="billing"\} [\d.]+$/m);
      expect(metrics).toMatch(
        /^ricochet_group_deliveries_held_total\{group="billing",reason="rate"\} [1-9]/m,
      );
    } finally {
      for (const consumer of consumers) await consumer.close();
    }
  });

  it('a simple consumer receives no faster than the limit, and a group without one is not held', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('workers', { startFrom: 'earliest', maxDeliveriesPerSecond: 50 });
    await broker.admin.putGroup('unlimited', { startFrom: 'earliest' });
    await sendMany(broker, 60);
    // A short long poll: a receive over a spread store's queues waits on each, and with the limit
    // split among them (X5) most hold nothing at any moment; 500 ms waits made 60 messages take
    // past the test's minute on a loaded machine (CI, contract-postgres-spread).
    await using limited = await startSimpleConsumer(broker.endpoint, {
      group: 'workers',
      subscriptions: { orders: '*' },
      awaitDurationMs: 50,
    });
    await using free = await startSimpleConsumer(broker.endpoint, {
      group: 'unlimited',
      subscriptions: { orders: '*' },
      awaitDurationMs: 500,
    });
    const receiveAll = async (consumer: typeof limited): Promise<number> => {
      const startedAt = performance.now();
      let received = 0;
      const attempts = new Set<number>();
      for (let round = 0; received < 60 && round < 200; round++) {
        const messages = await consumer.receive(32, 10_000);
        for (const message of messages) attempts.add(message.deliveryAttempt);
        received += messages.length;
        await Promise.all(messages.map((message) => consumer.ack(message)));
      }
      expect(received).toBe(60);
      // Each acked at its first lease: a lease a spread store's queue took for a receive another
      // queue answered is released, not expired, so no attempt is spent on a message nobody saw.
      expect([...attempts]).toEqual([1]);
      return performance.now() - startedAt;
    };
    // 60 at 50/s with a burst of 5: at least 1.1 s.
    expect(await receiveAll(limited)).toBeGreaterThanOrEqual(
      ((60 - deliveryBurst(50)) * 1_000) / 50 - RECEIPT_SLACK_MS,
    );
    expect(await receiveAll(free)).toBeLessThan(1_000);
  });
});
