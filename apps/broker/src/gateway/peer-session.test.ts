import { describe, expect, it } from 'vitest';
import { putGroup, startTestBroker } from '../broker.test-support.js';
import { CLOSE_CODES } from './close-codes.js';
import { RawClient } from './raw-client.test-support.js';

/** Sessions between brokers (`hello.queue`, `peer-access.ts`) on a broker of one queue, queue 0. */
const PEER_TOKEN = 'peer-token-for-tests';

const messageId = (n: number) => `2000000000000000000000000000${String(n).padStart(4, '0')}`;
const message = (n: number, topic = 'orders') => ({
  messageId: messageId(n),
  topic,
  body: new Uint8Array([n % 256]),
  bornAt: 1,
});

async function sendMessages(client: RawClient, from: number, count: number): Promise<void> {
  const answer = await client.request({
    type: 'send',
    messages: Array.from({ length: count }, (_, i) => message(from + i)),
  });
  expect(answer).toMatchObject({ type: 'sendResult' });
}

describe('sessions between brokers', () => {
  it('open with hello.queue and the peer token only, for a queue the broker serves', async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    const peer = await RawClient.connect(broker.url, { token: PEER_TOKEN, queue: 0 });
    expect(await peer.request({ type: 'send', messages: [message(1)] })).toMatchObject({
      type: 'sendResult',
      receipts: [{ ok: true, offset: 0 }],
    });
    await peer.close();

    for (const token of [undefined, 'not-the-peer-token']) {
      const refused = await RawClient.connect(broker.url, { hello: false });
      const closed = refused.closed();
      refused.sendFrame({ type: 'hello', protocolVersion: 1, queue: 0, ...(token ? { token } : {}) });
      expect(await refused.next()).toMatchObject({ type: 'error', code: 401 });
      expect(await closed).toBe(CLOSE_CODES.policyViolation);
    }
    const elsewhere = await RawClient.connect(broker.url, { hello: false });
    const closed = elsewhere.closed();
    elsewhere.sendFrame({ type: 'hello', protocolVersion: 1, queue: 1, token: PEER_TOKEN });
    expect(await elsewhere.next()).toMatchObject({ type: 'error', code: 503 });
    expect(await closed).toBe(CLOSE_CODES.tryAgainLater);
  });

  it('refuse every hello.queue on a broker without a peer token', async () => {
    await using broker = await startTestBroker();
    const refused = await RawClient.connect(broker.url, { hello: false });
    refused.sendFrame({ type: 'hello', protocolVersion: 1, queue: 0, token: PEER_TOKEN });
    expect(await refused.next()).toMatchObject({ type: 'error', code: 401 });
  });

  it('act onBehalfOf a client: its name and principal go in the delivery history; a client session may not', async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    // Full history: the success's entry is what names the client and its principal.
    await putGroup(broker, 'billing', { history: 'full' });
    const client = await RawClient.connect(broker.url, { clientId: 'worker-7' });
    await client.request({ type: 'register', group: 'billing', subscriptions: { orders: '*' } });
    expect(
      await client.request({
        type: 'receive',
        group: 'billing',
        subscriptions: { orders: '*' },
        maxMessages: 1,
        invisibleDurationMs: 10_000,
        awaitDurationMs: 0,
        onBehalfOf: { consumerId: 'someone-else' },
      }),
    ).toMatchObject({ type: 'error', code: 400 });

    const peer = await RawClient.connect(broker.url, { token: PEER_TOKEN, queue: 0, clientId: 'peer:b' });
    await sendMessages(peer, 1, 1);
    const received = await peer.request({
      type: 'receive',
      group: 'billing',
      subscriptions: { orders: '*' },
      maxMessages: 1,
      invisibleDurationMs: 10_000,
      awaitDurationMs: 0,
      onBehalfOf: { consumerId: 'billing-worker-1', principal: 'billing' },
    });
    if (received.type !== 'messages') throw new Error(`expected messages, got ${received.type}`);
    const handle = received.messages[0]?.receiptHandle ?? '';
    expect(
      await peer.request({
        type: 'ack',
        receiptHandles: [handle],
        onBehalfOf: { consumerId: 'billing-worker-1', principal: 'billing' },
      }),
    ).toMatchObject({ type: 'settled', failures: [] });
    const view = (await (
      await fetch(`http://127.0.0.1:${broker.address?.port}/v1/messages/${messageId(1)}`)
    ).json()) as { groups: { history: unknown[] }[] };
    expect(view.groups[0]?.history).toEqual([
      expect.objectContaining({ consumerId: 'billing-worker-1', principal: 'billing', result: 'committed' }),
    ]);
  });

  it('lend a push subscription its credit: it asks for more while messages are Ready, and gives back what it cannot spend', async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    await putGroup(broker, 'billing', { retryPolicy: { type: 'fixed', delayMs: 20 } });
    const peer = await RawClient.connect(broker.url, { token: PEER_TOKEN, queue: 0 });
    const subscriptionId = await peer.subscribe('billing', { orders: '*' }, 2);
    // Nothing Ready: the first loan comes back at once.
    expect(await peer.next((frame) => frame.type === 'creditReturned')).toEqual({
      type: 'creditReturned',
      subscriptionId,
      credits: 2,
    });

    await sendMessages(peer, 1, 5);
    // Without credit, it asks, for as many as are Ready, none of them late.
    expect(await peer.next((frame) => frame.type === 'creditWanted')).toEqual({
      type: 'creditWanted',
      subscriptionId,
      ready: 5,
      late: false,
    });
    peer.sendFrame({ type: 'credit', subscriptionId, credits: 3 });
    const first = await peer.nextDelivery();
    expect(first.messages.map((m) => m.messageId)).toEqual([messageId(1), messageId(2), messageId(3)]);
    // Two are left: it asks again once the loan is spent.
    expect(await peer.next((frame) => frame.type === 'creditWanted')).toMatchObject({
      ready: 2,
      late: false,
    });
    peer.sendFrame({ type: 'credit', subscriptionId, credits: 10 });
    const second = await peer.nextDelivery();
    expect(second.messages.map((m) => m.messageId)).toEqual([messageId(4), messageId(5)]);
    // What the last loan could not buy comes back, after the deliveries that spent the rest.
    expect(await peer.next((frame) => frame.type === 'creditReturned')).toEqual({
      type: 'creditReturned',
      subscriptionId,
      credits: 8,
    });

    // A failed delivery is Ready again when its retry is due: that is late work.
    const nacked = await peer.request({
      type: 'nack',
      items: [{ receiptHandle: second.messages[0]?.receiptHandle ?? '', reason: 'boom' }],
    });
    expect(nacked).toMatchObject({ type: 'settled', failures: [] });
    expect(await peer.next((frame) => frame.type === 'creditWanted')).toMatchObject({ ready: 1, late: true });
    peer.sendFrame({ type: 'credit', subscriptionId, credits: 1 });
    expect((await peer.nextDelivery()).messages).toEqual([
      expect.objectContaining({ messageId: messageId(4), deliveryAttempt: 2 }),
    ]);
  });

  it('lend a broadcasting subscription its credit too, per instance (B1)', async () => {
    await using broker = await startTestBroker({}, { peerToken: PEER_TOKEN });
    await putGroup(broker, 'audit', { consumeMode: 'broadcasting' });
    const peer = await RawClient.connect(broker.url, { token: PEER_TOKEN, queue: 0 });
    const subscribed = await peer.request({
      type: 'subscribe',
      group: 'audit',
      subscriptions: { orders: '*' },
      maxCachedMessages: 1,
      onBehalfOf: { consumerId: 'auditor-1', clientId: 'auditor-1' },
    });
    if (subscribed.type !== 'subscribed')
      throw new Error(`expected subscribed, got ${JSON.stringify(subscribed)}`);
    const { subscriptionId } = subscribed;
    expect(await peer.next((frame) => frame.type === 'creditReturned')).toMatchObject({
      subscriptionId,
      credits: 1,
    });
    await sendMessages(peer, 1, 3);
    expect(await peer.next((frame) => frame.type === 'creditWanted')).toEqual({
      type: 'creditWanted',
      subscriptionId,
      ready: 3,
      late: false,
    });
    peer.sendFrame({ type: 'credit', subscriptionId, credits: 5 });
    expect((await peer.nextDelivery()).messages.map((m) => m.messageId)).toEqual([1, 2, 3].map(messageId));
    expect(await peer.next((frame) => frame.type === 'creditReturned')).toMatchObject({
      subscriptionId,
      credits: 2,
    });
  });

  it('is not held to the per-connection caps: it carries many clients', async () => {
    await using broker = await startTestBroker(
      { maxSubscriptionsPerConnection: 1 },
      { peerToken: PEER_TOKEN },
    );
    await putGroup(broker, 'billing', {});
    const peer = await RawClient.connect(broker.url, { token: PEER_TOKEN, queue: 0 });
    await peer.subscribe('billing', { orders: '*' }, 1);
    await peer.subscribe('billing', { orders: '*' }, 1);
    const client = await RawClient.connect(broker.url);
    await client.subscribe('billing', { orders: '*' }, 1);
    expect(
      await client.request({
        type: 'subscribe',
        group: 'billing',
        subscriptions: { orders: '*' },
        maxCachedMessages: 1,
      }),
    ).toMatchObject({ type: 'error' });
  });
});
