import { describe, expect, it } from 'vitest';
import { startTestBroker } from './broker.test-support.js';
import { RawClient } from './gateway/raw-client.test-support.js';

const messageId = (n: number) => `0000000000000000000000000000${String(n).padStart(4, '0')}`;

describe('broker over the wire', () => {
  it('stores a send, leases it to a receive, and commits the ack', async () => {
    await using broker = await startTestBroker();
    const client = await RawClient.connect(broker.url);
    await fetch(`http://127.0.0.1:${broker.address?.port}/v1/groups/billing`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ startFrom: 'earliest' }),
    });
    const sent = await client.request({
      type: 'send',
      messages: [{ messageId: messageId(1), topic: 'orders', body: new Uint8Array([1, 2, 3]), bornAt: 1 }],
    });
    expect(sent).toMatchObject({ type: 'sendResult', receipts: [{ ok: true, offset: 0, duplicate: false }] });
    const received = await client.request({
      type: 'receive',
      group: 'billing',
      subscriptions: { orders: '*' },
      maxMessages: 10,
      invisibleDurationMs: 30_000,
      awaitDurationMs: 0,
    });
    expect(received.type).toBe('messages');
    if (received.type !== 'messages') return;
    expect(received.messages).toHaveLength(1);
    expect(received.messages[0]).toMatchObject({
      messageId: messageId(1),
      deliveryAttempt: 1,
      body: new Uint8Array([1, 2, 3]),
    });
    const acked = await client.request({
      type: 'ack',
      receiptHandles: [received.messages[0]?.receiptHandle ?? ''],
    });
    expect(acked).toEqual({ type: 'settled', id: expect.any(Number), failures: [] });
    const again = await client.request({
      type: 'ack',
      receiptHandles: [received.messages[0]?.receiptHandle ?? ''],
    });
    expect(again).toMatchObject({ failures: [{ index: 0, code: 410 }] });
    await client.close();
  });

  it('refuses an upgrade without the ricochet.v1 subprotocol', async () => {
    await using broker = await startTestBroker();
    await expect(RawClient.connect(broker.url, { protocols: ['other'] })).rejects.toThrow(/400/);
  });

  it('answers a malformed frame with 400 and keeps the session', async () => {
    await using broker = await startTestBroker();
    const client = await RawClient.connect(broker.url);
    client.sendBytes(new Uint8Array([0xc1]));
    expect(await client.next()).toMatchObject({ type: 'error', code: 400 });
    client.sendBytes('text');
    expect(await client.next()).toMatchObject({ type: 'error', code: 400 });
    const sent = await client.request({
      type: 'send',
      messages: [{ messageId: messageId(2), topic: 'orders', body: new Uint8Array(), bornAt: 1 }],
    });
    expect(sent.type).toBe('sendResult');
    await client.close();
  });

  it('closes a session whose first frame is not hello', async () => {
    await using broker = await startTestBroker();
    const client = await RawClient.connect(broker.url, { hello: false });
    const closed = client.closed();
    client.sendFrame({ type: 'ack', id: 1, receiptHandles: ['x'] });
    expect(await client.next()).toMatchObject({ type: 'error', code: 400 });
    expect(await closed).toBe(1002);
  });

  it('refuses a wrong token with 401 and closes with 1008', async () => {
    await using broker = await startTestBroker({ authTokens: ['right'] });
    const client = await RawClient.connect(broker.url, { hello: false });
    const closed = client.closed();
    client.sendFrame({ type: 'hello', protocolVersion: 1, token: 'wrong' });
    expect(await client.next()).toMatchObject({ type: 'error', code: 401 });
    expect(await closed).toBe(1008);
  });
});
