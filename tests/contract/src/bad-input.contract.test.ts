import { SimpleConsumer } from '@ricochet/simple-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { RawSocket } from './support/raw-socket.js';
import { expectNewOffsets } from './support/store-queues.js';
import { startBroker } from './support/test-broker.js';

const messageId = (n: number) => `badinput${String(n).padStart(24, '0')}`;

describe('bad input gets a catalogue error, stores nothing, and never disturbs other clients', () => {
  it('answers malformed frames and wrong types with 400 on that session only', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', { startFrom: 'earliest' });
    await using bystander = await startProducer(broker.endpoint);
    await using raw = await RawSocket.open(broker.endpoint);

    raw.sendBytes(new Uint8Array([0xc1, 0x00, 0xff]));
    expect(await raw.next()).toMatchObject({ type: 'error', code: 400 });
    raw.sendBytes('not binary');
    expect(await raw.next()).toMatchObject({ type: 'error', code: 400 });
    raw.sendFrame({
      type: 'send',
      id: 7,
      messages: [{ messageId: messageId(1), topic: 'orders', body: 'text, not bytes', bornAt: 1 }],
    });
    expect(await raw.next()).toMatchObject({ type: 'error', id: 7, code: 400 });
    raw.sendFrame({
      type: 'receive',
      id: 8,
      group: 'billing',
      subscriptions: { orders: '*' },
      maxMessages: 99,
      invisibleDurationMs: 10,
      awaitDurationMs: 0,
    });
    expect(await raw.next()).toMatchObject({ type: 'error', id: 8, code: 400 });
    expect(raw.isOpen).toBe(true);

    // Nothing was stored, and the other client works as if nothing happened.
    expect((await broker.admin.fetch('GET', '/v1/topics/orders')).status).toBe(404);
    const receipt = await bystander.send({ topic: 'orders', body: 'fine' });
    expectNewOffsets([receipt.offset]);
    await using consumer = await startSimpleConsumer(broker.endpoint, {
      group: 'billing',
      subscriptions: { orders: '*' },
      awaitDurationMs: 0,
    });
    expect((await consumer.receive(10, 30_000)).map((m) => text(m.body))).toEqual(['fine']);
  });

  it('answers an oversize body with 413 MESSAGE_TOO_LARGE and stores nothing', async () => {
    await using broker = await startBroker({ maxBodyBytes: 1_024 });
    await using raw = await RawSocket.open(broker.endpoint);
    raw.sendFrame({
      type: 'send',
      id: 1,
      messages: [
        { messageId: messageId(2), topic: 'orders', body: new Uint8Array(1_025), bornAt: 1 },
        { messageId: messageId(3), topic: 'orders', body: new Uint8Array(1_024), bornAt: 1 },
      ],
    });
    const result = await raw.next();
    expect(result).toMatchObject({
      type: 'sendResult',
      receipts: [
        { ok: false, messageId: messageId(2), error: { code: 413 } },
        { ok: true, messageId: messageId(3) },
      ],
    });
    if (result.type === 'sendResult' && result.receipts[1]?.ok) expectNewOffsets([result.receipts[1].offset]);
    else expect.unreachable('the second message was not stored');
    await expect(broker.admin.getMessage(messageId(2))).rejects.toThrow(/404/);

    await using producer = await startProducer(broker.endpoint);
    await expect(producer.send({ topic: 'orders', body: new Uint8Array(2_048) })).rejects.toMatchObject({
      code: 413,
    });
  });

  it('answers an unknown topic or group with 404 naming it when auto-creation is off', async () => {
    await using broker = await startBroker({ autoCreateTopics: false, autoCreateGroups: false });
    await using producer = await startProducer(broker.endpoint, { maxAttempts: 1 });
    await expect(producer.send({ topic: 'nowhere', body: 'x' })).rejects.toMatchObject({
      code: 404,
      details: { topic: 'nowhere' },
    });
    await broker.admin.putTopic('orders', { type: 'normal' });
    // Starting registers the subscriptions, so an unknown group fails the start, not a later receive.
    await using consumer = new SimpleConsumer({
      endpoint: broker.endpoint,
      group: 'ghost',
      subscriptions: { orders: '*' },
      awaitDurationMs: 0,
    });
    await expect(consumer.start()).rejects.toMatchObject({ code: 404, details: { group: 'ghost' } });
    await expect(consumer.receive(1, 30_000)).rejects.toMatchObject({
      code: 404,
      details: { group: 'ghost' },
    });
    expect((await broker.admin.fetch('GET', '/v1/topics/nowhere')).status).toBe(404);
  });

  it('answers a stale or forged receipt handle with 410 and changes nothing', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', { startFrom: 'earliest' });
    await using producer = await startProducer(broker.endpoint);
    await producer.send({ topic: 'orders', body: 'x' });
    await using raw = await RawSocket.open(broker.endpoint);
    raw.sendFrame({ type: 'ack', id: 3, receiptHandles: ['1~billing~orders~0~1', 'made-up'] });
    expect(await raw.next()).toMatchObject({
      type: 'settled',
      id: 3,
      failures: [
        { index: 0, code: 410 },
        { index: 1, code: 410 },
      ],
    });
    expect((await broker.admin.getGroup('billing')).stats.committed).toBe(0);
  });

  it('answers a send that does not fit the topic type with 409, at once', async () => {
    await using broker = await startBroker();
    await broker.admin.putTopic('ledger', { type: 'fifo' });
    await using producer = await startProducer(broker.endpoint);
    await expect(producer.send({ topic: 'ledger', body: 'no group' })).rejects.toMatchObject({ code: 409 });
    await expect(producer.send({ topic: 'orders', body: 'x', messageGroup: 'g1' })).rejects.toMatchObject({
      code: 409,
    });
    expectNewOffsets([(await producer.send({ topic: 'ledger', body: 'ok', messageGroup: 'g1' })).offset]);
  });

  it('rejects an invalid admin body with 400 and every issue', async () => {
    await using broker = await startBroker();
    const response = await broker.admin.fetch('PUT', '/v1/groups/billing', {
      maxRetries: -1,
      retryPolicy: { type: 'fixed', delayMs: 'soon' },
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: number; issues: { path: string[] }[] } };
    expect(body.error.code).toBe(400);
    expect(body.error.issues.map((issue) => issue.path.join('.'))).toEqual(
      expect.arrayContaining(['maxRetries', 'retryPolicy.delayMs']),
    );
    expect((await broker.admin.fetch('GET', '/v1/groups/billing')).status).toBe(404);
  });
});
