import { describe, expect, it } from 'vitest';
import { putGroup, startTestBroker } from './broker.test-support.js';
import { RawClient } from './gateway/raw-client.test-support.js';

const messageId = (n: number) => `1000000000000000000000000000${String(n).padStart(4, '0')}`;

describe('push deliveries over the wire', () => {
  it('delivers, retries a nack with deliveryAttempt 2, and dead-letters after maxRetries', async () => {
    await using broker = await startTestBroker();
    await putGroup(broker, 'billing', {
      maxRetries: 1,
      retryPolicy: { type: 'fixed', delayMs: 20 },
    });
    const consumer = await RawClient.connect(broker.url);
    await consumer.subscribe('billing', { orders: '*' }, 10);
    const producer = await RawClient.connect(broker.url);
    await producer.request({
      type: 'send',
      messages: [{ messageId: messageId(1), topic: 'orders', body: new Uint8Array([7]), bornAt: 1 }],
    });

    const first = await consumer.nextDelivery();
    expect(first.messages[0]).toMatchObject({ messageId: messageId(1), deliveryAttempt: 1 });
    const nacked = await consumer.request({
      type: 'nack',
      items: [{ receiptHandle: first.messages[0]?.receiptHandle ?? '', reason: 'boom' }],
    });
    expect(nacked).toMatchObject({ type: 'settled', failures: [] });

    const second = await consumer.nextDelivery();
    expect(second.messages[0]).toMatchObject({ messageId: messageId(1), deliveryAttempt: 2 });
    await consumer.request({
      type: 'nack',
      items: [{ receiptHandle: second.messages[0]?.receiptHandle ?? '', reason: 'boom again' }],
    });

    const group = (await (
      await fetch(`http://127.0.0.1:${broker.address?.port}/v1/groups/billing`)
    ).json()) as { stats: unknown };
    expect(group.stats).toMatchObject({ dlq: 1, inflight: 0, waitingRetry: 0 });
    const message = (await (
      await fetch(`http://127.0.0.1:${broker.address?.port}/v1/messages/${messageId(1)}`)
    ).json()) as { groups: { history: { result: string }[] }[] };
    expect(message.groups[0]?.history.map((entry) => entry.result)).toEqual(['failed', 'deadLettered']);
    await consumer.close();
    await producer.close();
  });
});
