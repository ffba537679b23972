import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { framesUrl, postBytes, postFrames, sendFrame } from './support/http-frames.js';
import { AuthFileFixture } from './support/security.js';
import { startBroker } from './support/test-broker.js';

const SUBSCRIPTIONS = { orders: '*' } as const;

function receive(id: number, group: string, awaitDurationMs = 0) {
  return {
    type: 'receive',
    id,
    group,
    subscriptions: SUBSCRIPTIONS,
    maxMessages: 10,
    invisibleDurationMs: 30_000,
    awaitDurationMs,
  } as const;
}

describe('the HTTP transport: POST /v1/frames (docs/protocol/transports.md#http)', () => {
  it('sends, then registers, receives and acks statelessly, each request its own session', async () => {
    await using broker = await startBroker();
    const registered = await postFrames(broker.endpoint, {
      type: 'register',
      id: 1,
      group: 'billing',
      subscriptions: SUBSCRIPTIONS,
    });
    expect(registered).toMatchObject({ status: 200, frames: [{ type: 'ok', id: 1 }] });
    const sent = await postFrames(broker.endpoint, sendFrame(2, 'orders', 'one'));
    expect(sent).toMatchObject({
      status: 200,
      frames: [{ type: 'sendResult', id: 2, receipts: [{ ok: true, offset: 0 }] }],
    });

    const received = await postFrames(broker.endpoint, receive(3, 'billing'));
    const messages = received.frames[0]?.type === 'messages' ? received.frames[0].messages : [];
    expect(messages.map((message) => text(message.body))).toEqual(['one']);
    const handle = messages[0]?.receiptHandle as string;
    const acked = await postFrames(broker.endpoint, { type: 'ack', id: 4, receiptHandles: [handle] });
    expect(acked.frames).toEqual([{ type: 'settled', id: 4, failures: [] }]);
    expect((await broker.admin.getGroup('billing')).stats).toMatchObject({ inflight: 0, committed: 1 });
  });

  it('answers a batch frame by frame, in order: a register before a receive is in force for it', async () => {
    await using broker = await startBroker();
    // A new group starts at the topic's end: the register must come before the send.
    const answer = await postFrames(broker.endpoint, [
      { type: 'hello', protocolVersion: 1, clientId: 'batch-client' },
      { type: 'register', id: 1, group: 'billing', subscriptions: SUBSCRIPTIONS },
      sendFrame(2, 'orders', 'batched'),
      receive(3, 'billing'),
    ]);
    expect(answer.status).toBe(200);
    expect(answer.frames.map((frame) => frame.type)).toEqual(['welcome', 'ok', 'sendResult', 'messages']);
    const messages = answer.frames[3]?.type === 'messages' ? answer.frames[3].messages : [];
    expect(messages.map((message) => text(message.body))).toEqual(['batched']);
  });

  it('long-polls: a receive waits for a message sent meanwhile by a WebSocket producer', async () => {
    await using broker = await startBroker();
    await postFrames(broker.endpoint, {
      type: 'register',
      id: 1,
      group: 'billing',
      subscriptions: SUBSCRIPTIONS,
    });
    const waiting = postFrames(broker.endpoint, receive(2, 'billing', 20_000));
    await using producer = await startProducer(broker.endpoint);
    await producer.send({ topic: 'orders', body: 'late' });
    const answer = await waiting;
    const messages = answer.frames[0]?.type === 'messages' ? answer.frames[0].messages : [];
    expect(messages.map((message) => text(message.body))).toEqual(['late']);
  });

  it('speaks JSON with message bodies as base64 text', async () => {
    await using broker = await startBroker();
    const post = (frames: unknown) =>
      postBytes(broker.endpoint, JSON.stringify(frames), { contentType: 'application/json; charset=utf-8' });
    await post({ type: 'register', id: 1, group: 'billing', subscriptions: SUBSCRIPTIONS });
    const body = Buffer.from([0, 255, 1, 254]).toString('base64');
    const sent = await post({
      type: 'send',
      id: 2,
      messages: [{ messageId: 'json-1', topic: 'orders', body, bornAt: Date.now() }],
    });
    expect(sent).toMatchObject({ status: 200, frames: [{ type: 'sendResult', receipts: [{ ok: true }] }] });
    const received = await post([receive(3, 'billing')]);
    expect(received.frames).toMatchObject([
      { type: 'messages', id: 3, messages: [{ messageId: 'json-1', body }] },
    ]);
    const notBase64 = await post({
      type: 'send',
      id: 4,
      messages: [{ messageId: 'json-2', topic: 'orders', body: 'not base64!', bornAt: Date.now() }],
    });
    expect(notBase64).toMatchObject({ status: 400, frames: [{ type: 'error', id: 4, code: 400 }] });
    expect(notBase64.frames[0]).toMatchObject({ message: expect.stringContaining('base64') });
    expect((await broker.admin.getTopic('orders')).stats.messages).toBe(1);
  });

  it('refuses bad input with a clear error, stores nothing, and never disturbs other clients', async () => {
    await using broker = await startBroker({ maxBodyBytes: 1024, maxFrameBytes: 1024 + 64 * 1024 });
    await using consumer = await startSimpleConsumer(broker.endpoint, {
      group: 'billing',
      subscriptions: SUBSCRIPTIONS,
    });
    const url = broker.endpoint;

    const wrongType = await postBytes(url, 'hello', { contentType: 'text/plain' });
    expect(wrongType).toMatchObject({ status: 415, frames: [{ type: 'error', code: 400 }] });
    const noType = await postBytes(url, new Uint8Array([0x80]));
    expect(noType.status).toBe(415);
    const garbage = await postBytes(url, new Uint8Array([0xc1, 0xff, 0x00]), {
      contentType: 'application/msgpack',
    });
    expect(garbage).toMatchObject({ status: 400, frames: [{ type: 'error', code: 400 }] });
    const badJson = await postBytes(url, '{"type":', { contentType: 'application/json' });
    expect(badJson).toMatchObject({ status: 400, frames: [{ type: 'error', code: 400 }] });
    const oversize = await postBytes(url, new Uint8Array(2 * 1024 * 1024), {
      contentType: 'application/msgpack',
    });
    expect(oversize).toMatchObject({ status: 413, frames: [{ type: 'error', code: 413 }] });
    const bigBody = await postFrames(url, sendFrame(1, 'orders', 'x'.repeat(2048)));
    expect(bigBody.frames).toMatchObject([
      { type: 'sendResult', receipts: [{ ok: false, error: { code: 413 } }] },
    ]);
    const invalid = await postFrames(url, { type: 'receive', id: 2 } as never);
    expect(invalid).toMatchObject({ status: 400, frames: [{ type: 'error', id: 2, code: 400 }] });
    const stale = await postFrames(url, { type: 'ack', id: 3, receiptHandles: ['not-a-handle'] });
    expect(stale.frames).toMatchObject([{ type: 'settled', failures: [{ index: 0, code: 410 }] }]);
    const unknownGroup = await postFrames(url, {
      type: 'changeInvisibleDuration',
      id: 4,
      receiptHandle: 'not-a-handle',
      invisibleDurationMs: 1_000,
    });
    expect(unknownGroup).toMatchObject({ status: 410, frames: [{ type: 'error', id: 4, code: 410 }] });
    const push = await postFrames(url, [
      { type: 'subscribe', id: 5, group: 'billing', subscriptions: SUBSCRIPTIONS, maxCachedMessages: 10 },
      { type: 'credit', subscriptionId: 1, credits: 5 },
    ]);
    expect(push).toMatchObject({
      status: 200,
      frames: [
        { type: 'error', id: 5, code: 400 },
        { type: 'error', code: 400 },
      ],
    });
    expect(push.frames[0]).toMatchObject({ message: expect.stringContaining('stream') });

    // Nothing was stored, and the WebSocket consumer still works.
    expect(
      (await broker.admin.listTopics()).topics.find((topic) => topic.name === 'orders')?.stats.messages ?? 0,
    ).toBe(0);
    await using producer = await startProducer(broker.endpoint);
    await producer.send({ topic: 'orders', body: 'after' });
    const [message] = await consumer.receive(1, 30_000);
    expect(message && text(message.body)).toBe('after');
  });

  it('with auth: 401 for a missing or unknown token, 403 for what the principal may not do, nothing stored', async () => {
    using auth = new AuthFileFixture({
      ops: { admin: 'write' },
      'orders-service': { publish: ['orders'] },
      'billing-worker': { consume: [{ group: 'billing', topics: ['orders'] }] },
    });
    await using broker = await startBroker({ authFile: auth.path });
    for (const token of [undefined, 'not-a-token-anyone-holds']) {
      const refused = await postFrames(
        broker.endpoint,
        sendFrame(1, 'orders', 'x'),
        token === undefined ? {} : { token },
      );
      expect(refused).toMatchObject({ status: 401, frames: [{ type: 'error', code: 401 }] });
      expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
    // Admin rights are not what this route asks for: an admin may not publish.
    const admin = await postFrames(broker.endpoint, sendFrame(2, 'orders', 'x'), {
      token: auth.token('ops'),
    });
    expect(admin.frames).toMatchObject([
      { type: 'sendResult', receipts: [{ ok: false, error: { code: 403 } }] },
    ]);
    const consume = await postFrames(
      broker.endpoint,
      { type: 'register', id: 3, group: 'billing', subscriptions: SUBSCRIPTIONS },
      { token: auth.token('orders-service') },
    );
    expect(consume).toMatchObject({ status: 403, frames: [{ type: 'error', id: 3, code: 403 }] });
    const groups = await fetch(`${framesUrl(broker.endpoint).replace('/v1/frames', '')}/v1/groups`, {
      headers: { authorization: `Bearer ${auth.token('ops')}` },
    });
    expect(((await groups.json()) as { groups: unknown[] }).groups).toEqual([]);

    const worker = { token: auth.token('billing-worker') };
    expect(
      (
        await postFrames(
          broker.endpoint,
          { type: 'register', id: 4, group: 'billing', subscriptions: SUBSCRIPTIONS },
          worker,
        )
      ).status,
    ).toBe(200);
    const sent = await postFrames(broker.endpoint, sendFrame(5, 'orders', 'allowed'), {
      token: auth.token('orders-service'),
    });
    expect(sent.frames).toMatchObject([{ type: 'sendResult', receipts: [{ ok: true, offset: 0 }] }]);
    const received = await postFrames(broker.endpoint, receive(6, 'billing'), worker);
    expect(received.frames).toMatchObject([{ type: 'messages', messages: [{ offset: 0 }] }]);
  });
});
