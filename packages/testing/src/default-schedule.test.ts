import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startTestBroker } from './test-broker.js';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** P3's table, written out here on purpose: the test must not read the default it checks. */
const DEFAULT_GAPS_MS = [
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

describe('the full default schedule on the virtual clock (P3, P4)', () => {
  it('fails 17 deliveries at 10 s, 30 s … 2 h apart, then dead-letters the message', async ({ annotate }) => {
    await using broker = await startTestBroker();
    const seen: { attempt: number; atMs: number }[] = [];
    await using consumer = new PushConsumer({
      endpoint: broker.endpoint,
      group: 'billing',
      subscriptions: { orders: '*' },
      listener: (message) => {
        seen.push({ attempt: message.deliveryAttempt, atMs: broker.clock.now() });
        return ConsumeResult.FAILURE;
      },
      onListenerError: () => {},
    });
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const startedAt = performance.now();
    const { messageId } = await producer.send({ topic: 'orders', body: 'order 1042' });
    await broker.waitForDelivery({ group: 'billing', messageId, attempt: 1 });
    await broker.clock.runUntilIdle();
    const walkMs = performance.now() - startedAt;

    const dead = await broker.expectInDlq('billing', messageId);
    expect(dead).toMatchObject({
      attempts: 17,
      originTopic: 'orders',
      reason: 'the listener returned FAILURE',
    });
    const history = await broker.history(messageId, { group: 'billing' });
    const elapsed = [0];
    for (const gapMs of DEFAULT_GAPS_MS) elapsed.push((elapsed.at(-1) ?? 0) + gapMs);
    expect(history.map((delivery) => delivery.elapsedMs)).toEqual(elapsed);
    expect(history.map((delivery) => delivery.result)).toEqual([...Array(16).fill('failed'), 'deadLettered']);
    expect(seen.map((delivery) => delivery.attempt)).toEqual(elapsed.map((_, index) => index + 1));
    expect(seen.map((delivery) => delivery.atMs - (seen[0]?.atMs ?? 0))).toEqual(elapsed);
    expect(elapsed.at(-1)).toBe(4 * HOUR + 45 * MINUTE + 40 * SECOND);
    // Measured, not asserted: a busy machine must not fail the suite. The bar is < 1 s.
    await annotate(`4 h 45 min 40 s of retries walked in ${Math.round(walkMs)} ms of real time`);
  });
});
