import { describe, expect, it } from 'vitest';
import { startTestBroker } from './broker.test-support.js';
import { RawClient } from './gateway/raw-client.test-support.js';

const messageId = (n: number) => `1000000000000000000000000000${String(n).padStart(4, '0')}`;

async function putGroup(port: number | undefined, group: string, body: unknown): Promise<void> {
  const response = await fetch(`http://127.0.0.1:${port}/v1/groups/${group}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(response.status).toBe(200);
}

describe('push deliveries over the wire', () => {
  it('delivers, retries a nack with deliveryAttempt 2, and dead-letters after maxRetries', async () => {
    await using broker = await startTestBroker();
    await putGroup(broker.address?.port, 'billing', {
      maxRetries: 1,
      retryPolicy: { type: 'fixed', delayMs: 20 },
    });
    const consumer = await RawClient.connect(broker.url);
    const subscribed = await consumer.request({
      type: 'subscribe',
      group: 'billing',
      subscriptions: { orders: '*' },
      maxCachedMessages: 10,
    });
    expect(subscribed.type).toBe('subscribed');
    const producer = await RawClient.connect(broker.url);
    await producer.request({
      type: 'send',
      messages: [{ messageId: messageId(1), topic: 'orders', body: new Uint8Array([7]), bornAt: 1 }],
    });

    const first = await consumer.next((frame) => frame.type === 'deliver');
    if (first.type !== 'deliver') throw new Error('expected deliver');
    expect(first.messages[0]).toMatchObject({ messageId: messageId(1), deliveryAttempt: 1 });
    const nacked = await consumer.request({
      type: 'nack',
      items: [{ receiptHandle: first.messages[0]?.receiptHandle ?? '', reason: 'boom' }],
    });
    expect(nacked).toMatchObject({ type: 'settled', failures: [] });

    const second = await consumer.next((frame) => frame.type === 'deliver');
    if (second.type !== 'deliver') throw new Error('expected deliver');
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
