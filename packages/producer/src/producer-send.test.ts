import { type AddressInfo, createServer } from 'node:net';
import { answerEachMessage, holdSendAnswers, messageIdsByFrame, rejectionOf } from '@ricochet/client-testkit';
import { BrokerError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { producersPerTest } from './producer.fixture.js';
import { EAGER_FRAME_MESSAGES } from './send-lane.js';

const { brokers, createProducer } = producersPerTest();

describe('send (R1)', () => {
  it('resolves with the id and offset of the broker receipt, filling in the message', async () => {
    const fake = await brokers.start();
    const producer = createProducer(fake.endpoint);
    await producer.start();
    const result = await producer.send({
      topic: 'orders',
      body: '{"orderId":1042}',
      tag: 'paid',
      keys: ['order-1042'],
      messageGroup: 'customer-7',
      properties: { region: 'eu' },
      delayMs: 1_000,
    });
    const [frame] = fake.framesOf('send');
    const message = frame?.messages[0];
    expect(result).toEqual({ messageId: message?.messageId, offset: 0 });
    expect(message?.messageId).toMatch(/^[0-9a-f]{32}$/);
    expect(message).toMatchObject({
      topic: 'orders',
      tag: 'paid',
      keys: ['order-1042'],
      messageGroup: 'customer-7',
      properties: { region: 'eu' },
      delayMs: 1_000,
    });
    expect(new TextDecoder().decode(message?.body)).toBe('{"orderId":1042}');
    expect(Math.abs((message?.bornAt ?? 0) - Date.now())).toBeLessThan(5_000);
  });

  it('resolves only when the receipt arrives', async () => {
    const fake = await brokers.start();
    const release = holdSendAnswers(fake);
    const producer = createProducer(fake.endpoint);
    let resolved = false;
    const sending = producer.send({ topic: 'orders', body: 'x' }).then((result) => {
      resolved = true;
      return result;
    });
    await fake.waitForFrames('send');
    // One more round trip: had the producer resolved early, it would have by now.
    await new Promise((resolve) => setImmediate(resolve));
    expect(resolved).toBe(false);
    for (const answer of release) answer();
    await expect(sending).resolves.toMatchObject({ offset: 0 });
  });

  it('starts by itself when send comes first, and uses a caller-supplied id', async () => {
    const fake = await brokers.start();
    const producer = createProducer(fake.endpoint);
    const result = await producer.send({
      topic: 'orders',
      body: new Uint8Array([1, 2]),
      messageId: 'order-1042:v1',
    });
    expect(result.messageId).toBe('order-1042:v1');
    expect(fake.framesOf('send')[0]?.messages[0]?.body).toEqual(new Uint8Array([1, 2]));
  });

  it('takes a list of endpoints, and sends through the broker that answers', async () => {
    const fake = await brokers.start();
    // A port the system handed out, closed again: nobody listens there.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const producer = createProducer([`ws://127.0.0.1:${port}`, fake.endpoint]);
    await expect(producer.send({ topic: 'orders', body: 'x' })).resolves.toMatchObject({ offset: 0 });
    expect(fake.connectionCount).toBe(1);
  });

  it('rejects start with the broker code when the handshake is refused', async () => {
    const fake = await brokers.start({ onHello: () => ({ code: 401, message: 'no token' }) });
    const producer = createProducer(fake.endpoint);
    const error = await rejectionOf(producer.start());
    expect(error).toBeInstanceOf(BrokerError);
    expect(error.code).toBe(401);
    expect((await rejectionOf(producer.send({ topic: 'orders', body: 'x' }))).code).toBe(401);
  });
});

describe('local checks', () => {
  it('fails a body over the welcome maxBodyBytes at once with 413, sending nothing', async () => {
    const fake = await brokers.start({ maxBodyBytes: 10 });
    const producer = createProducer(fake.endpoint);
    await producer.start();
    const error = await rejectionOf(producer.send({ topic: 'orders', body: new Uint8Array(11) }));
    expect(error).toMatchObject({
      name: 'ClientError',
      code: 413,
      retryable: false,
      details: { bodyBytes: 11, maxBodyBytes: 10 },
    });
    await producer.send({ topic: 'orders', body: new Uint8Array(10) });
    expect(fake.framesOf('send')).toHaveLength(1);
  });

  it('fails a malformed message with 400 before it can spoil a batch', async () => {
    const fake = await brokers.start();
    const producer = createProducer(fake.endpoint);
    await producer.start();
    const results = await Promise.allSettled([
      producer.send({ topic: 'orders', body: 'a' }),
      producer.send({ topic: 'no spaces allowed', body: 'b' }),
      producer.send({ topic: 'orders', body: 'c', delayMs: 5, delayLevel: 2 }),
      producer.send({ topic: 'orders', body: 'd' }),
    ]);
    expect(results.map((result) => result.status)).toEqual([
      'fulfilled',
      'rejected',
      'rejected',
      'fulfilled',
    ]);
    for (const result of results) {
      if (result.status === 'rejected')
        expect(result.reason).toMatchObject({ name: 'ClientError', code: 400 });
    }
    expect(fake.framesOf('send')).toHaveLength(1);
  });

  it('fails properties over 16 KiB with 413', async () => {
    const fake = await brokers.start();
    const producer = createProducer(fake.endpoint);
    const error = await rejectionOf(
      producer.send({ topic: 'orders', body: 'x', properties: { big: 'x'.repeat(16 * 1024) } }),
    );
    expect(error).toMatchObject({ name: 'ClientError', code: 413 });
  });
});

describe('batching', () => {
  it('coalesces sends made in the same tick into one frame, each with its own receipt', async () => {
    const fake = await brokers.start();
    const producer = createProducer(fake.endpoint);
    await producer.start();
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, index) => producer.send({ topic: 'orders', body: `message ${index}` })),
    );
    const frames = fake.framesOf('send');
    expect(frames).toHaveLength(1);
    expect(frames[0]?.messages.map((message) => new TextDecoder().decode(message.body))).toEqual(
      results.map((_, index) => `message ${index}`),
    );
    expect(results.map((result) => result.offset)).toEqual(results.map((_, index) => index));
    expect(results.map((result) => result.messageId)).toEqual(messageIdsByFrame(frames)[0]);
  });

  it('splits every 256 messages, so several frames are in flight, and at about 1 MiB of bodies', async () => {
    const fake = await brokers.start();
    const producer = createProducer(fake.endpoint);
    await producer.start();
    await Promise.all(Array.from({ length: 1_030 }, () => producer.send({ topic: 'orders', body: 'x' })));
    expect(fake.framesOf('send').map((frame) => frame.messages.length)).toEqual([256, 256, 256, 256, 6]);
    const big = new Uint8Array(400 * 1024);
    await Promise.all([1, 2, 3, 4].map(() => producer.send({ topic: 'orders', body: big })));
    expect(
      fake
        .framesOf('send')
        .slice(5)
        .map((frame) => frame.messages.length),
    ).toEqual([2, 2]);
  });

  it('gathers the sends made while a connection is busy into one frame, sent when an answer frees it', async () => {
    const fake = await brokers.start();
    const release = holdSendAnswers(fake);
    const producer = createProducer(fake.endpoint);
    await producer.start();
    const first = Array.from({ length: EAGER_FRAME_MESSAGES }, () =>
      producer.send({ topic: 'orders', body: 'x' }),
    );
    await fake.waitForFrames('send');
    // Three flushes of sends while 64 are unanswered (each its own microtask, all within one
    // task, so no timer runs between them): they wait, and leave together, whether the answer
    // or MAX_LANE_WAIT_MS comes first. Without the lane they would leave as three frames.
    const later: Promise<unknown>[] = [];
    for (const count of [3, 5, 2]) {
      for (let i = 0; i < count; i++) later.push(producer.send({ topic: 'orders', body: 'y' }));
      await Promise.resolve();
    }
    release.shift()?.();
    await Promise.all(first);
    await fake.waitForFrames('send', 2);
    release.shift()?.();
    await Promise.all(later);
    expect(fake.framesOf('send').map((frame) => frame.messages.length)).toEqual([EAGER_FRAME_MESSAGES, 10]);
  });

  it('keeps frames under the broker maxFrameBytes', async () => {
    const fake = await brokers.start({ maxFrameBytes: 64 * 1024 });
    const producer = createProducer(fake.endpoint);
    await producer.start();
    // Two of these would fit in 1 MiB but not in 64 KiB: the broker would close with 1009.
    await Promise.all(
      [1, 2, 3].map(() => producer.send({ topic: 'orders', body: new Uint8Array(40 * 1024) })),
    );
    expect(fake.framesOf('send').map((frame) => frame.messages.length)).toEqual([1, 1, 1]);
    expect(fake.sessions).toHaveLength(1);
  });

  it('fails or retries only the message whose receipt failed', async () => {
    const fake = await brokers.start();
    let calls = 0;
    answerEachMessage(fake, () => {
      calls += 1;
      if (calls === 2) return { code: 409, message: 'fifo topic needs a messageGroup' };
      if (calls === 3) return { code: 500, message: 'store hiccup' };
      return undefined;
    });
    const producer = createProducer(fake.endpoint);
    await producer.start();
    const results = await Promise.allSettled(
      ['a', 'b', 'c', 'd'].map((body) => producer.send({ topic: 'orders', body })),
    );
    expect(results.map((result) => result.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: 409 });
    const frames = messageIdsByFrame(fake.framesOf('send'));
    expect(frames).toHaveLength(2);
    // Only the 500 is retried, in a frame of its own.
    expect(frames[1]).toEqual([frames[0]?.[2]]);
  });
});
