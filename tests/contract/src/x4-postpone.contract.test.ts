import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { eventually, startRecordingConsumer, untilDeadLettered } from './support/push.js';
import { startBroker } from './support/test-broker.js';

describe('X4: ConsumeResult.postpone(ms) brings a message back after ms without counting an attempt', () => {
  it('postpones twice then succeeds, in a group with maxRetries 0: no attempt spent, the same deliveryAttempt', async () => {
    await using broker = await startBroker();
    // maxRetries 0: one counted failure would send the message to the DLQ at once (P4).
    await broker.admin.putGroup('billing', { startFrom: 'earliest', maxRetries: 0, history: 'full' });
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      (_message, index) => (index < 2 ? ConsumeResult.postpone(200) : ConsumeResult.SUCCESS),
    );
    await using producer = await startProducer(broker.endpoint);
    const { messageId } = await producer.send({ topic: 'orders', body: 'order 1042' });
    const deliveries = await consumer.delivered(3);
    expect(deliveries.map(({ message }) => message.deliveryAttempt)).toEqual([1, 1, 1]);

    const stats = await eventually(
      () => broker.admin.getGroup('billing').then((group) => group.stats),
      (s) => s.committed === 1,
    );
    expect(stats).toMatchObject({ committed: 1, dlq: 0 });
    const history = (await broker.admin.getMessage(messageId)).groups[0]?.history ?? [];
    expect(history.map(({ result }) => result)).toEqual(['postponed', 'postponed', 'committed']);
    // Each came back after the 200 ms asked, counted by the broker from the postponement.
    for (const [i, entry] of history.slice(1).entries())
      expect(entry.deliveredAt - (history[i]?.settledAt ?? 0)).toBeGreaterThanOrEqual(200);
  });

  it.each([
    {
      // maxRetries 0: the postponement past maxPostponeMs is a failure, and the last one.
      bound: 'maxPostponeMs, after which a postponement is a failure (here the last one)',
      config: { maxRetries: 0, maxPostponeMs: 500 },
      dlq: { cause: 'maxRetries', attempts: 1, reason: 'postponed for longer than maxPostponeMs' },
    },
    {
      bound: 'the retry budget when the group has one',
      config: { maxRetryDurationMs: 500 },
      dlq: { cause: 'retryBudget', attempts: 1, reason: 'postponed past the retry budget' },
    },
  ])('is bounded by $bound', async ({ config, dlq }) => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', { startFrom: 'earliest', ...config });
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      () => ConsumeResult.postpone(200),
    );
    await using producer = await startProducer(broker.endpoint);
    const { messageId } = await producer.send({ topic: 'orders', body: 'order 1042' });
    await untilDeadLettered(broker.admin, 'billing', 1);
    expect((await broker.admin.listDlq('billing')).messages[0]).toMatchObject({ messageId, ...dlq });
    // Postponed at about 0, 200 and 400 ms, each back within 500 ms; the next would come back past it.
    expect(consumer.deliveries.length).toBeGreaterThanOrEqual(3);
    expect(consumer.deliveries.every(({ message }) => message.deliveryAttempt === 1)).toBe(true);
  });
});
