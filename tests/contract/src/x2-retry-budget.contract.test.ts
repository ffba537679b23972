import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { startRecordingConsumer, untilDeadLettered } from './support/push.js';
import { startBroker } from './support/test-broker.js';

describe('X2: a failed message whose next retry would fall past the group’s maxRetryDurationMs goes to the DLQ', () => {
  it('dead-letters a push-consumed message with attempts left once its retries would pass the budget', async () => {
    await using broker = await startBroker();
    // Retries 300 ms apart and a budget of 1 000 ms: deliveries at about 0, 300, 600 and 900 ms;
    // the failure of the fourth would retry at about 1 200 ms, past the budget. 16 retries allowed.
    await broker.admin.putGroup('billing', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: 300 },
      maxRetryDurationMs: 1_000,
    });
    expect((await broker.admin.getGroup('billing')).config).toMatchObject({
      maxRetries: 16,
      maxRetryDurationMs: 1_000,
    });
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      () => ConsumeResult.FAILURE,
    );
    await using producer = await startProducer(broker.endpoint);
    const { messageId } = await producer.send({ topic: 'orders', body: 'order 1042' });

    await untilDeadLettered(broker.admin, 'billing', 1);
    const [entry] = (await broker.admin.listDlq('billing')).messages;
    expect(entry).toMatchObject({ messageId, cause: 'retryBudget', reason: 'the listener returned FAILURE' });
    // Far fewer than 17 deliveries: the budget, not maxRetries, ended it.
    const history = (await broker.admin.getMessage(messageId)).groups[0]?.history ?? [];
    const first = history[0]?.deliveredAt ?? 0;
    const last = history.at(-1);
    expect(entry?.attempts).toBe(history.length);
    expect(history.length).toBeLessThan(17);
    expect(last?.result).toBe('deadLettered');
    // Every retry was scheduled within the budget, and the one refused would have fallen past it.
    // The schedule (each failure + 300 ms), not when the retry arrived: a loaded machine delivers a
    // retry due at 900 ms a little late, and X2 judges the time the failure schedules.
    for (const failure of history.slice(0, -1))
      expect((failure.settledAt ?? Number.POSITIVE_INFINITY) + 300 - first).toBeLessThanOrEqual(1_000);
    expect((last?.settledAt ?? 0) + 300 - first).toBeGreaterThan(1_000);
    expect(consumer.deliveries).toHaveLength(history.length);
  });

  it('counts for simple consumers too: an expired lease past the budget goes to the DLQ', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', { startFrom: 'earliest', maxRetryDurationMs: 200 });
    await using consumer = await startSimpleConsumer(broker.endpoint, {
      group: 'billing',
      subscriptions: { orders: '*' },
      awaitDurationMs: 0,
    });
    await using producer = await startProducer(broker.endpoint);
    const { messageId } = await producer.send({ topic: 'orders', body: 'order 1042' });
    // A 300 ms lease, never acked: when it expires, the first delivery is 300 ms ago, past 200.
    const [message] = await consumer.receive(1, 300);
    expect(message?.messageId).toBe(messageId);
    await untilDeadLettered(broker.admin, 'billing', 1);
    const [entry] = (await broker.admin.listDlq('billing')).messages;
    expect(entry).toMatchObject({ messageId, cause: 'retryBudget', attempts: 1 });
  });

  it('has no budget by default, and refuses a budget below 1 ms with 400', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: 50 },
    });
    expect((await broker.admin.getGroup('billing')).config).not.toHaveProperty('maxRetryDurationMs');
    const bad = await broker.admin.fetch('PUT', '/v1/groups/billing', { maxRetryDurationMs: 0 });
    expect(bad.status).toBe(400);
  });
});
