import { ClientError } from '@ricochet/client';
import { FAST_BACKOFF, FakeBroker, nextStatus, rejectionOf } from '@ricochet/client-testkit';
import { ExponentialBackoff } from '@ricochet/core';
import { BrokerError, type SendFrame } from '@ricochet/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Producer, type ProducerOptions } from './producer.js';

let broker: FakeBroker | undefined;
const producers: Producer[] = [];

afterEach(async () => {
  await Promise.all(producers.splice(0).map((producer) => producer.close({ drainTimeoutMs: 0 })));
  await broker?.close();
  broker = undefined;
  vi.restoreAllMocks();
});

async function startBroker(options: Parameters<typeof FakeBroker.start>[0] = {}): Promise<FakeBroker> {
  broker = await FakeBroker.start(options);
  return broker;
}

function createProducer(endpoint: string, options: Partial<ProducerOptions> = {}): Producer {
  const producer = new Producer({
    endpoint,
    reconnectBackoff: FAST_BACKOFF,
    retryBackoff: FAST_BACKOFF,
    onProtocolError: () => {},
    ...options,
  });
  producers.push(producer);
  return producer;
}

/** Answer each message of a send frame with the receipt `decide` picks (undefined: store it). */
function answerEach(
  fake: FakeBroker,
  decide: (messageId: string, attempt: number) => { code: number; message: string } | undefined,
): void {
  const attempts = new Map<string, number>();
  fake.on('send', (frame, session) => {
    session.send({
      type: 'sendResult',
      id: frame.id,
      receipts: frame.messages.map((message) => {
        const attempt = (attempts.get(message.messageId) ?? 0) + 1;
        attempts.set(message.messageId, attempt);
        const error = decide(message.messageId, attempt);
        return error === undefined
          ? fake.store(message.messageId)
          : { ok: false as const, messageId: message.messageId, error };
      }),
    });
  });
}

const idsOf = (frames: readonly SendFrame[]) => frames.map((frame) => frame.messages.map((m) => m.messageId));

describe('send (R1)', () => {
  it('resolves with the id and offset of the broker receipt, filling in the message', async () => {
    const fake = await startBroker();
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
    const fake = await startBroker();
    const release: Array<() => void> = [];
    fake.on('send', (frame, session) => {
      release.push(() =>
        session.send({
          type: 'sendResult',
          id: frame.id,
          receipts: frame.messages.map((m) => fake.store(m.messageId)),
        }),
      );
    });
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
    const fake = await startBroker();
    const producer = createProducer(fake.endpoint);
    const result = await producer.send({
      topic: 'orders',
      body: new Uint8Array([1, 2]),
      messageId: 'order-1042:v1',
    });
    expect(result.messageId).toBe('order-1042:v1');
    expect(fake.framesOf('send')[0]?.messages[0]?.body).toEqual(new Uint8Array([1, 2]));
  });

  it('rejects start with the broker code when the handshake is refused', async () => {
    const fake = await startBroker({ onHello: () => ({ code: 401, message: 'no token' }) });
    const producer = createProducer(fake.endpoint);
    const error = await rejectionOf(producer.start());
    expect(error).toBeInstanceOf(BrokerError);
    expect(error.code).toBe(401);
    expect((await rejectionOf(producer.send({ topic: 'orders', body: 'x' }))).code).toBe(401);
  });
});

describe('local checks', () => {
  it('fails a body over the welcome maxBodyBytes at once with 413, sending nothing', async () => {
    const fake = await startBroker({ maxBodyBytes: 10 });
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
    const fake = await startBroker();
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
    const fake = await startBroker();
    const producer = createProducer(fake.endpoint);
    const error = await rejectionOf(
      producer.send({ topic: 'orders', body: 'x', properties: { big: 'x'.repeat(16 * 1024) } }),
    );
    expect(error).toMatchObject({ name: 'ClientError', code: 413 });
  });
});

describe('batching', () => {
  it('coalesces sends made in the same tick into one frame, each with its own receipt', async () => {
    const fake = await startBroker();
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
    expect(results.map((result) => result.messageId)).toEqual(idsOf(frames)[0]);
  });

  it('splits every 256 messages, so several frames are in flight, and at about 1 MiB of bodies', async () => {
    const fake = await startBroker();
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

  it('keeps frames under the broker maxFrameBytes', async () => {
    const fake = await startBroker({ maxFrameBytes: 64 * 1024 });
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
    const fake = await startBroker();
    let calls = 0;
    answerEach(fake, () => {
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
    const frames = idsOf(fake.framesOf('send'));
    expect(frames).toHaveLength(2);
    // Only the 500 is retried, in a frame of its own.
    expect(frames[1]).toEqual([frames[0]?.[2]]);
  });
});

describe('retries (R2, R3)', () => {
  it('retries at once after the connection drops mid-request, with the same messageId', async () => {
    const fake = await startBroker();
    let drops = 1;
    fake.on('send', (frame, session) => {
      if (drops-- > 0) {
        session.drop();
        return;
      }
      session.send({
        type: 'sendResult',
        id: frame.id,
        receipts: frame.messages.map((m) => fake.store(m.messageId)),
      });
    });
    const nextDelays = vi.spyOn(ExponentialBackoff.prototype, 'nextDelayMs');
    const producer = createProducer(fake.endpoint);
    await producer.start();
    nextDelays.mockClear();
    const result = await producer.send({ topic: 'orders', body: 'x' });
    const frames = idsOf(fake.framesOf('send'));
    expect(frames).toEqual([[result.messageId], [result.messageId]]);
    expect(fake.sessions).toHaveLength(2);
    // The only backoff was the connection's own reconnect wait; no throttling backoff.
    expect(nextDelays).toHaveBeenCalledTimes(1);
  });

  it.each([
    [408, 'REQUEST_TIMEOUT'],
    [500, 'INTERNAL_ERROR'],
    [503, 'BROKER_UNAVAILABLE'],
  ])('retries %i (%s) at once, as a whole-frame error or a failed receipt', async (code) => {
    const fake = await startBroker();
    let attempt = 0;
    fake.on('send', (frame, session) => {
      attempt += 1;
      if (attempt === 1) session.send({ type: 'error', id: frame.id, code, message: 'try again' });
      else if (attempt === 2) {
        session.send({
          type: 'sendResult',
          id: frame.id,
          receipts: frame.messages.map((m) => ({
            ok: false,
            messageId: m.messageId,
            error: { code, message: 'again' },
          })),
        });
      } else {
        session.send({
          type: 'sendResult',
          id: frame.id,
          receipts: frame.messages.map((m) => fake.store(m.messageId)),
        });
      }
    });
    const nextDelays = vi.spyOn(ExponentialBackoff.prototype, 'nextDelayMs');
    const producer = createProducer(fake.endpoint);
    await producer.start();
    const result = await producer.send({ topic: 'orders', body: 'x' });
    expect(idsOf(fake.framesOf('send'))).toEqual([
      [result.messageId],
      [result.messageId],
      [result.messageId],
    ]);
    expect(nextDelays).not.toHaveBeenCalled();
  });

  it('retries 530 after the delays of ExponentialBackoff, per message', async () => {
    const fake = await startBroker();
    answerEach(fake, (_, attempt) => (attempt <= 2 ? { code: 530, message: 'throttled' } : undefined));
    const producer = createProducer(fake.endpoint, {
      retryBackoff: { initialMs: 20, multiplier: 2, jitter: 0.5, maxMs: 1_000, random: () => 0 },
    });
    await producer.start();
    const nextDelays = vi.spyOn(ExponentialBackoff.prototype, 'nextDelayMs');
    const startedAt = performance.now();
    const result = await producer.send({ topic: 'orders', body: 'x' });
    const elapsedMs = performance.now() - startedAt;
    // 20 (the first window has no jitter), then 40 − 50 % from the injected random.
    expect(nextDelays.mock.results.map((call) => call.value)).toEqual([20, 20]);
    expect(elapsedMs).toBeGreaterThanOrEqual(40 - 2);
    expect(idsOf(fake.framesOf('send'))).toEqual([
      [result.messageId],
      [result.messageId],
      [result.messageId],
    ]);
  });

  it('honours maxAttempts and rejects with the last error, code intact', async () => {
    const fake = await startBroker();
    let attempt = 0;
    fake.on('send', (frame, session) => {
      attempt += 1;
      session.send({
        type: 'error',
        id: frame.id,
        code: attempt < 4 ? 500 : 503,
        message: `failure ${attempt}`,
      });
    });
    const producer = createProducer(fake.endpoint, { maxAttempts: 4 });
    const error = await rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    expect(error).toBeInstanceOf(BrokerError);
    expect(error).toMatchObject({ code: 503, message: 'failure 4', retryable: true });
    expect(fake.framesOf('send')).toHaveLength(4);
    expect(new Set(idsOf(fake.framesOf('send')).flat()).size).toBe(1);
  });

  it('gives up on 530 after maxAttempts with the 530', async () => {
    const fake = await startBroker();
    answerEach(fake, () => ({ code: 530, message: 'throttled' }));
    const producer = createProducer(fake.endpoint, { maxAttempts: 2 });
    const error = await rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    expect(error).toMatchObject({ code: 530 });
    expect(fake.framesOf('send')).toHaveLength(2);
  });

  it.each([400, 401, 403, 404, 409, 413, 599])('fails %i at once, without a retry', async (code) => {
    const fake = await startBroker();
    answerEach(fake, () => ({ code, message: 'no' }));
    const producer = createProducer(fake.endpoint);
    const error = await rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    expect(error).toMatchObject({ code, retryable: false });
    expect(fake.framesOf('send')).toHaveLength(1);
  });

  it('retries a timed-out attempt, and rejects with TIMEOUT when every attempt times out', async () => {
    const fake = await startBroker();
    let silent = 1;
    fake.on('send', (frame, session) => {
      if (silent-- > 0) return;
      session.send({
        type: 'sendResult',
        id: frame.id,
        receipts: frame.messages.map((m) => fake.store(m.messageId)),
      });
    });
    const producer = createProducer(fake.endpoint, { requestTimeoutMs: 100 });
    const result = await producer.send({ topic: 'orders', body: 'x' });
    expect(idsOf(fake.framesOf('send'))).toEqual([[result.messageId], [result.messageId]]);

    fake.on('send', () => {});
    const error = await rejectionOf(producer.send({ topic: 'orders', body: 'y' }));
    expect(error).toMatchObject({ name: 'ClientError', code: 'TIMEOUT', retryable: true });
    expect(fake.framesOf('send')).toHaveLength(2 + 3);
  });

  it('holds sends made while reconnecting and sends them once reconnected', async () => {
    const fake = await startBroker();
    const producer = createProducer(fake.endpoint);
    await producer.start();
    const disconnected = nextStatus(producer, 'disconnected');
    fake.dropAll();
    await disconnected;
    const result = await producer.send({ topic: 'orders', body: 'x' });
    expect(fake.sessions).toHaveLength(2);
    expect(idsOf(fake.framesOf('send'))).toEqual([[result.messageId]]);
  });
});

describe('abort and close', () => {
  it('rejects with ABORTED, before sending or while backing off, and stops retrying', async () => {
    const fake = await startBroker();
    answerEach(fake, () => ({ code: 530, message: 'throttled' }));
    const producer = createProducer(fake.endpoint, {
      retryBackoff: { initialMs: 60_000, maxMs: 60_000, jitter: 0 },
    });
    await producer.start();
    expect(
      (await rejectionOf(producer.send({ topic: 'orders', body: 'x' }, { signal: AbortSignal.abort() })))
        .code,
    ).toBe('ABORTED');
    const controller = new AbortController();
    const sending = rejectionOf(producer.send({ topic: 'orders', body: 'y' }, { signal: controller.signal }));
    await fake.waitForFrames('send');
    controller.abort();
    expect(await sending).toMatchObject({ code: 'ABORTED', retryable: false });
    expect(fake.framesOf('send')).toHaveLength(1);
  });

  it('waits for pending sends on close, then refuses new ones', async () => {
    const fake = await startBroker();
    const answers: Array<() => void> = [];
    fake.on('send', (frame, session) => {
      answers.push(() =>
        session.send({
          type: 'sendResult',
          id: frame.id,
          receipts: frame.messages.map((m) => fake.store(m.messageId)),
        }),
      );
    });
    const producer = createProducer(fake.endpoint);
    await producer.start();
    const sending = producer.send({ topic: 'orders', body: 'x' });
    await fake.waitForFrames('send');
    const closing = producer.close();
    expect((await rejectionOf(producer.send({ topic: 'orders', body: 'y' }))).code).toBe('CLIENT_CLOSED');
    for (const answer of answers) answer();
    await expect(sending).resolves.toMatchObject({ offset: 0 });
    await closing;
    expect(producer.connectionStatus.state).toBe('closed');
    expect(producer.close()).toBe(closing);
  });

  it('fails what is still pending after drainTimeoutMs with CLIENT_CLOSED', async () => {
    const fake = await startBroker();
    answerEach(fake, () => ({ code: 530, message: 'throttled' }));
    const producer = createProducer(fake.endpoint, {
      retryBackoff: { initialMs: 60_000, maxMs: 60_000, jitter: 0 },
    });
    const sending = rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    await fake.waitForFrames('send');
    await producer.close({ drainTimeoutMs: 10 });
    expect(await sending).toMatchObject({ code: 'CLIENT_CLOSED', retryable: false });
  });

  it('closes through await using', async () => {
    const fake = await startBroker();
    let observed: Producer | undefined;
    {
      await using producer = new Producer({ endpoint: fake.endpoint, reconnectBackoff: FAST_BACKOFF });
      await producer.send({ topic: 'orders', body: 'x' });
      observed = producer;
    }
    expect(observed.connectionStatus.state).toBe('closed');
  });

  it('checks its options', () => {
    expect(() => new Producer({ endpoint: 'ws://127.0.0.1:1', maxAttempts: 0 })).toThrow(ClientError);
    expect(() => new Producer({ endpoint: 'http://127.0.0.1:1' })).toThrow(ClientError);
    expect(() => new Producer({ endpoint: 'ws://127.0.0.1:1', retryBackoff: { initialMs: -1 } })).toThrow(
      RangeError,
    );
  });
});
