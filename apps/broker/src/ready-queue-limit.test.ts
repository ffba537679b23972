import { describe, expect, it, vi } from 'vitest';
import { putGroup, startTestBroker } from './broker.test-support.js';
import { RawClient } from './gateway/raw-client.test-support.js';

const MESSAGES = 5;
const FIFO_MESSAGES = 12;
const messageId = (n: number) => `2000000000000000000000000000${String(n).padStart(4, '0')}`;

async function subscribe(url: string): Promise<RawClient> {
  const consumer = await RawClient.connect(url);
  await consumer.subscribe('billing', { orders: '*' }, MESSAGES);
  return consumer;
}

/** Deliveries until `count` messages arrived, in arrival order. */
async function receive(consumer: RawClient, count: number) {
  const messages = [];
  while (messages.length < count) messages.push(...(await consumer.nextDelivery()).messages);
  return messages;
}

describe('the ready queue limit', () => {
  it('holds due retries back while the queue is full and releases them once it drains', async () => {
    await using broker = await startTestBroker({ maxReadyQueuePerGroup: 2 });
    await putGroup(broker, 'billing', { maxRetries: 3, retryPolicy: { type: 'fixed', delayMs: 10 } });

    const first = await subscribe(broker.url);
    const producer = await RawClient.connect(broker.url);
    await producer.request({
      type: 'send',
      messages: Array.from({ length: MESSAGES }, (_, i) => ({
        messageId: messageId(i),
        topic: 'orders',
        body: new Uint8Array([i]),
        bornAt: 1,
      })),
    });
    const delivered = await receive(first, MESSAGES);
    const nacked = await first.request({
      type: 'nack',
      items: delivered.map((message) => ({ receiptHandle: message.receiptHandle, reason: 'boom' })),
    });
    expect(nacked).toMatchObject({ type: 'settled', failures: [] });
    await first.close();

    // No consumer: two retries fill the ready queue, the other three must wait for room.
    const groupUrl = `http://127.0.0.1:${broker.address?.port}/v1/groups/billing`;
    await vi.waitFor(
      async () => {
        const { stats } = (await (await fetch(groupUrl)).json()) as { stats: Record<string, number> };
        expect(stats).toMatchObject({ ready: 2, waitingRetry: 3 });
      },
      { timeout: 5_000, interval: 10 },
    );

    const second = await subscribe(broker.url);
    const retried = await receive(second, MESSAGES);
    expect(retried.map((message) => message.deliveryAttempt)).toEqual(Array(MESSAGES).fill(2));
    expect(new Set(retried.map((message) => message.messageId)).size).toBe(MESSAGES);
    await Promise.all([second.close(), producer.close()]);
  });

  it('keeps a FIFO group moving when the messages parked behind a failed head outnumber the queue limit (P5)', async () => {
    await using broker = await startTestBroker({ maxReadyQueuePerGroup: 4 });
    const topicUrl = `http://127.0.0.1:${broker.address?.port}/v1/topics/orders`;
    const created = await fetch(topicUrl, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'fifo' }),
    });
    expect(created.ok).toBe(true);
    await putGroup(broker, 'billing', {
      fifo: true,
      maxRetries: 3,
      retryPolicy: { type: 'fixed', delayMs: 10 },
    });
    const consumer = await RawClient.connect(broker.url);
    // Credit for every delivery the test makes: this raw client never tops it up.
    await consumer.subscribe('billing', { orders: '*' }, FIFO_MESSAGES * 2);
    const producer = await RawClient.connect(broker.url);
    const sent = await producer.request({
      type: 'send',
      messages: Array.from({ length: FIFO_MESSAGES }, (_, i) => ({
        messageId: messageId(100 + i),
        topic: 'orders',
        messageGroup: 'customer-1',
        body: new Uint8Array([i]),
        bornAt: 1,
      })),
    });
    expect(sent.type).toBe('sendResult');

    // The head goes out alone; everything behind it waits. Its retry must still come, although
    // more messages wait behind it than the ready queue may hold.
    const [head] = (await consumer.nextDelivery()).messages;
    expect(head).toMatchObject({ messageId: messageId(100), deliveryAttempt: 1 });
    await consumer.request({
      type: 'nack',
      items: [{ receiptHandle: head?.receiptHandle ?? '', reason: 'boom' }],
    });

    const order: string[] = [];
    for (let guard = 0; guard < FIFO_MESSAGES * 2 && order.length < FIFO_MESSAGES; guard++) {
      const { messages } = await consumer.nextDelivery();
      for (const message of messages) {
        order.push(message.messageId);
        await consumer.request({ type: 'ack', receiptHandles: [message.receiptHandle] });
      }
    }
    expect(order).toEqual(Array.from({ length: FIFO_MESSAGES }, (_, i) => messageId(100 + i)));
    await Promise.all([consumer.close(), producer.close()]);
  }, 20_000);
});
