import { describe, expect, it } from 'vitest';
import { putGroup, startTestBroker } from '../broker.test-support.js';
import { RawClient } from '../gateway/raw-client.test-support.js';

const messageId = (n: number) => `0000000000000000000000000000${String(n).padStart(4, '0')}`;

async function getJson(broker: { address?: { port: number } | undefined }, path: string) {
  const response = await fetch(`http://127.0.0.1:${broker.address?.port}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function receiveAll(client: RawClient, group: string, topic: string) {
  const received = await client.request({
    type: 'receive',
    group,
    subscriptions: { [topic]: '*' },
    maxMessages: 10,
    invisibleDurationMs: 30_000,
    awaitDurationMs: 0,
  });
  if (received.type !== 'messages') throw new Error(`receive answered ${received.type}`);
  return received.messages;
}

describe('GET /v1/counters', () => {
  it('counts sends per topic and deliveries and acks per group since the broker started', async () => {
    await using broker = await startTestBroker();
    const client = await RawClient.connect(broker.url);
    await putGroup(broker, 'billing', { startFrom: 'earliest' });
    expect((await getJson(broker, '/v1/counters')).body).toEqual({ topics: [], groups: [] });
    await client.request({
      type: 'send',
      messages: [1, 2].map((n) => ({
        messageId: messageId(n),
        topic: 'orders',
        body: new Uint8Array([n]),
        bornAt: 1,
      })),
    });
    const [first] = await receiveAll(client, 'billing', 'orders');
    await client.request({ type: 'ack', receiptHandles: [first?.receiptHandle ?? ''] });
    expect((await getJson(broker, '/v1/counters')).body).toEqual({
      topics: [{ name: 'orders', sent: 2 }],
      groups: [{ name: 'billing', delivered: 2, acked: 1, retried: 0, deadLettered: 0, released: 0 }],
    });
    await client.close();
  });
});

describe('GET /v1/groups/:group/fifo', () => {
  it('lists the message groups a head holds, with the head, until the head is committed (P5)', async () => {
    await using broker = await startTestBroker();
    const client = await RawClient.connect(broker.url);
    await fetch(`http://127.0.0.1:${broker.address?.port}/v1/topics/orders`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'fifo' }),
    });
    await putGroup(broker, 'ledger', { fifo: true, startFrom: 'earliest' });
    await client.request({
      type: 'send',
      messages: [
        {
          messageId: messageId(1),
          topic: 'orders',
          body: new Uint8Array([1]),
          bornAt: 1,
          messageGroup: 'customer-1',
        },
        {
          messageId: messageId(2),
          topic: 'orders',
          body: new Uint8Array([2]),
          bornAt: 1,
          messageGroup: 'customer-1',
        },
        {
          messageId: messageId(3),
          topic: 'orders',
          body: new Uint8Array([3]),
          bornAt: 1,
          messageGroup: 'customer-2',
        },
      ],
    });
    const received = await receiveAll(client, 'ledger', 'orders');
    expect(received.map((message) => message.messageId)).toEqual([messageId(1), messageId(3)]);

    const held = await getJson(broker, '/v1/groups/ledger/fifo');
    expect(held).toEqual({
      status: 200,
      body: {
        messageGroups: [
          {
            topic: 'orders',
            messageGroup: 'customer-1',
            offset: 0,
            messageId: messageId(1),
            state: 'inflight',
            deliveryAttempt: 1,
          },
          {
            topic: 'orders',
            messageGroup: 'customer-2',
            offset: 2,
            messageId: messageId(3),
            state: 'inflight',
            deliveryAttempt: 1,
          },
        ],
      },
    });

    const customer2 = received.find((message) => message.messageId === messageId(3));
    await client.request({ type: 'ack', receiptHandles: [customer2?.receiptHandle ?? ''] });
    expect((await getJson(broker, '/v1/groups/ledger/fifo')).body).toEqual({
      messageGroups: [expect.objectContaining({ messageGroup: 'customer-1', messageId: messageId(1) })],
    });
    await client.close();
  });

  it('answers 404 for an unknown group and 400 for a bad limit', async () => {
    await using broker = await startTestBroker();
    expect(await getJson(broker, '/v1/groups/nobody/fifo')).toMatchObject({
      status: 404,
      body: { error: { name: 'NOT_FOUND', details: { group: 'nobody' } } },
    });
    await putGroup(broker, 'ledger', {});
    expect((await getJson(broker, '/v1/groups/ledger/fifo?limit=0')).status).toBe(400);
    expect(await getJson(broker, '/v1/groups/ledger/fifo')).toEqual({
      status: 200,
      body: { messageGroups: [] },
    });
  });
});

describe('GET /v1/topics/:topic/backlog', () => {
  it("shows the topic's R4 limit and each reading group's backlog, which throttles at the limit", async () => {
    await using broker = await startTestBroker();
    const client = await RawClient.connect(broker.url);
    await fetch(`http://127.0.0.1:${broker.address?.port}/v1/topics/orders`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'normal', maxBacklogMessages: 2 }),
    });
    await putGroup(broker, 'billing', { startFrom: 'earliest' });
    await putGroup(broker, 'audit', { startFrom: 'earliest' });
    expect(await receiveAll(client, 'billing', 'orders')).toEqual([]);
    const send = (n: number) =>
      client.request({
        type: 'send',
        messages: [{ messageId: messageId(n), topic: 'orders', body: new Uint8Array([n]), bornAt: 1 }],
      });
    await send(1);
    await send(2);
    // audit never registered for orders: it does not read it, and does not count.
    expect((await getJson(broker, '/v1/topics/orders/backlog')).body).toEqual({
      topic: 'orders',
      maxBacklogMessages: 2,
      groups: [{ group: 'billing', backlog: 2 }],
    });
    expect(await send(3)).toMatchObject({ receipts: [{ ok: false, error: { code: 530 } }] });
    expect(await getJson(broker, '/v1/topics/ghost/backlog')).toMatchObject({ status: 404 });
    await client.close();
  });
});
