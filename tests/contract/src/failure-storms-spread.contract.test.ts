import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';

/**
 * Failure storms (DESIGN.md §11) over a group whose messages are spread over several queues
 * (DESIGN.md §9): the rule trips on the outcomes of every queue, and a resume reaches every one.
 * In the `contract-postgres-spread` run the store has 4 queues over three brokers, and the test's
 * clients each reach another broker; in the embedded run, one queue, where the same holds trivially.
 */
describe('Failure storms over spread queues', () => {
  it('trips on the whole group: with queues spread over brokers, every queue holds on their outcomes together', async () => {
    // 12 messages over the store's queues (4 in the spread run, over three brokers): no queue sees
    // the 12 failures that trip the rule alone, and none fails 12 times in all, even after every
    // attempt; the group does. Retries come 1 s after a failure: by then every queue must hold.
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', {
      startFrom: 'earliest',
      maxRetries: 2,
      retryPolicy: { type: 'fixed', delayMs: 1_000 },
      pauseOnFailures: {
        failureRatio: 0.5,
        minOutcomes: 12,
        windowMs: 30_000,
        pauseMs: 60_000,
        maxPauseMs: 60_000,
      },
    });
    const ids: string[] = [];
    {
      await using producer = await startProducer(broker.endpoint);
      for (let i = 0; i < 12; i++)
        ids.push((await producer.send({ topic: 'orders', body: `order ${i}` })).messageId);
    }
    let failing = true;
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      () => (failing ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS),
    );
    // Every message's retry fell due into the pause: its history says held.
    const heldIn = async (id: string) =>
      (await broker.admin.getMessage(id)).groups
        .find((group) => group.group === 'billing')
        ?.history.some((entry) => entry.result === 'held') === true;
    await eventually(
      () => Promise.all(ids.map(heldIn)),
      (held) => held.every(Boolean),
      20_000,
    );
    expect(consumer.deliveries).toHaveLength(12);
    failing = false;
    await broker.admin.resumeGroup('billing');
    const stats = await eventually(
      () => broker.admin.getGroup('billing').then((group) => group.stats),
      (s) => s.committed === 12,
    );
    expect(stats.dlq).toBe(0);
    expect(consumer.deliveries.map(({ message }) => message.deliveryAttempt).sort()).toEqual([
      ...Array(12).fill(1),
      ...Array(12).fill(2),
    ]);
  });
});
