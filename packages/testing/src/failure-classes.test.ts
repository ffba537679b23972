import { Producer } from '@ricochet/producer';
import { NonRetryableError, PushConsumer } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startTestBroker } from './test-broker.js';

describe('a non-retryable failure on the virtual clock (X1)', () => {
  it('reaches the DLQ after one delivery, without the clock moving', async () => {
    await using broker = await startTestBroker();
    await using consumer = new PushConsumer({
      endpoint: broker.endpoint,
      group: 'billing',
      subscriptions: { orders: '*' },
      listener: () => {
        throw new NonRetryableError('order 1042 no longer exists');
      },
      onListenerError: () => {},
    });
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const startedAtMs = broker.clock.now();
    const { messageId } = await producer.send({ topic: 'orders', body: 'order 1042' });
    await broker.waitForDelivery({ group: 'billing', messageId, attempt: 1 });

    expect(await broker.expectInDlq('billing', messageId)).toMatchObject({
      attempts: 1,
      reason: 'order 1042 no longer exists',
      cause: 'nonRetryable',
    });
    expect((await broker.history(messageId)).map((delivery) => delivery.result)).toEqual(['deadLettered']);
    expect(broker.clock.now()).toBe(startedAtMs);
  });
});
