import { answerEachMessage, messageIdsByFrame, nextStatus, rejectionOf } from '@ricochet/client-testkit';
import { ExponentialBackoff } from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';
import { describe, expect, it, vi } from 'vitest';
import { producersPerTest } from './producer.fixture.js';

const { brokers, createProducer } = producersPerTest();

describe('retries (R2, R3)', () => {
  it('retries at once after the connection drops mid-request, with the same messageId', async () => {
    const fake = await brokers.start();
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
    const frames = messageIdsByFrame(fake.framesOf('send'));
    expect(frames).toEqual([[result.messageId], [result.messageId]]);
    expect(fake.sessions).toHaveLength(2);
    // The only backoff was the connection's own reconnect wait; no throttling backoff.
    expect(nextDelays).toHaveBeenCalledTimes(1);
  });

  it.each([
    [408, 'REQUEST_TIMEOUT'],
    [500, 'INTERNAL_ERROR'],
  ])('retries %i (%s) at once, as a whole-frame error or a failed receipt', async (code) => {
    const fake = await brokers.start();
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
    expect(messageIdsByFrame(fake.framesOf('send'))).toEqual([
      [result.messageId],
      [result.messageId],
      [result.messageId],
    ]);
    expect(nextDelays).not.toHaveBeenCalled();
  });

  it('retries 530 after the delays of ExponentialBackoff, per message', async () => {
    const fake = await brokers.start();
    answerEachMessage(fake, (_, attempt) => (attempt <= 2 ? { code: 530, message: 'throttled' } : undefined));
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
    expect(messageIdsByFrame(fake.framesOf('send'))).toEqual([
      [result.messageId],
      [result.messageId],
      [result.messageId],
    ]);
  });

  it('waits at least the retryAfterMs hint of a 530, when it is longer than the backoff', async () => {
    const fake = await brokers.start();
    let attempt = 0;
    fake.on('send', (frame, session) => {
      attempt += 1;
      // As the broker answers a principal over its publish rate: the whole frame, with the hint.
      if (attempt === 1)
        session.send({
          type: 'error',
          id: frame.id,
          code: 530,
          message: 'over the rate',
          details: { retryAfterMs: 150 },
        });
      else
        session.send({
          type: 'sendResult',
          id: frame.id,
          receipts: frame.messages.map((m) => fake.store(m.messageId)),
        });
    });
    const producer = createProducer(fake.endpoint, {
      retryBackoff: { initialMs: 10, multiplier: 2, jitter: 0, maxMs: 1_000 },
    });
    await producer.start();
    const startedAt = performance.now();
    await producer.send({ topic: 'orders', body: 'x' });
    // A lower bound only: the hint, not the 10 ms backoff, decided the wait.
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(150 - 2);
    expect(fake.framesOf('send')).toHaveLength(2);
  });

  it('keeps the backoff when it is longer than the hint, and ignores a hint that is no number', async () => {
    const fake = await brokers.start();
    answerEachMessage(fake, (_, attempt) =>
      attempt === 1
        ? { code: 530, message: 'throttled', details: { retryAfterMs: 1 } }
        : attempt === 2
          ? { code: 530, message: 'throttled', details: { retryAfterMs: 'soon' } }
          : undefined,
    );
    const producer = createProducer(fake.endpoint, {
      retryBackoff: { initialMs: 60, multiplier: 1, jitter: 0, maxMs: 1_000 },
    });
    await producer.start();
    const startedAt = performance.now();
    await producer.send({ topic: 'orders', body: 'x' });
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(120 - 2);
    expect(fake.framesOf('send')).toHaveLength(3);
  });

  it('honours maxAttempts and rejects with the last error, code intact', async () => {
    const fake = await brokers.start();
    let attempt = 0;
    fake.on('send', (frame, session) => {
      attempt += 1;
      session.send({
        type: 'error',
        id: frame.id,
        code: attempt < 4 ? 500 : 408,
        message: `failure ${attempt}`,
      });
    });
    const producer = createProducer(fake.endpoint, { maxAttempts: 4 });
    const error = await rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    expect(error).toBeInstanceOf(BrokerError);
    expect(error).toMatchObject({ code: 408, message: 'failure 4', retryable: true });
    expect(fake.framesOf('send')).toHaveLength(4);
    expect(new Set(messageIdsByFrame(fake.framesOf('send')).flat()).size).toBe(1);
  });

  it('retries 503 (a queue between owners) after 25 ms, 50, 100, … as a frame error or a receipt, beyond maxAttempts', async () => {
    const fake = await brokers.start();
    let attempt = 0;
    const sentAt: number[] = [];
    fake.on('send', (frame, session) => {
      attempt += 1;
      sentAt.push(performance.now());
      if (attempt <= 2) {
        session.send({
          type: 'error',
          id: frame.id,
          code: 503,
          message: 'queue 0 is between owners; try again',
        });
      } else if (attempt <= 4) {
        session.send({
          type: 'sendResult',
          id: frame.id,
          receipts: frame.messages.map((m) => ({
            ok: false,
            messageId: m.messageId,
            error: { code: 503, message: 'queue 0 is between owners; try again' },
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
    const producer = createProducer(fake.endpoint, { maxAttempts: 2 });
    await producer.start();
    const result = await producer.send({ topic: 'orders', body: 'x' });
    expect(messageIdsByFrame(fake.framesOf('send'))).toEqual(
      Array.from({ length: 5 }, () => [result.messageId]),
    );
    // The gaps grow from 25 ms (±20 %), and 530's backoff is not used.
    const gaps = sentAt.slice(1).map((at, i) => at - (sentAt[i] ?? at));
    expect(gaps[0]).toBeGreaterThanOrEqual(20 - 2);
    expect(gaps[3]).toBeGreaterThanOrEqual(160 - 2);
    expect(nextDelays).not.toHaveBeenCalled();
  });

  it('rejects with the last 503 once sendTimeoutMs leaves no time for another retry', async () => {
    const fake = await brokers.start();
    answerEachMessage(fake, (_, attempt) => ({ code: 503, message: `between owners ${attempt}` }));
    const producer = createProducer(fake.endpoint, { sendTimeoutMs: 300 });
    await producer.start();
    const startedAt = performance.now();
    const error = await rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    const elapsedMs = performance.now() - startedAt;
    const frames = fake.framesOf('send');
    expect(error).toBeInstanceOf(BrokerError);
    expect(error).toMatchObject({ code: 503, message: `between owners ${frames.length}`, retryable: true });
    // 25 + 50 + 100 ms (±20 %) fit in 300 ms, the next 200 ms does not: 4 or 5 attempts, none after the deadline.
    expect(frames.length).toBeGreaterThanOrEqual(4);
    expect(frames.length).toBeLessThanOrEqual(5);
    expect(elapsedMs).toBeLessThan(300 + 100);
    expect(new Set(messageIdsByFrame(frames).flat()).size).toBe(1);
  });

  it('counts other failures between 503s against maxAttempts', async () => {
    const fake = await brokers.start();
    answerEachMessage(fake, (_, attempt) =>
      attempt % 2 === 1
        ? { code: 503, message: 'between owners' }
        : { code: 500, message: `failure ${attempt}` },
    );
    const producer = createProducer(fake.endpoint, { maxAttempts: 2 });
    const error = await rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    // 503, 500 (1st counted), 503, 500 (2nd counted: maxAttempts reached).
    expect(error).toMatchObject({ code: 500, message: 'failure 4' });
    expect(fake.framesOf('send')).toHaveLength(4);
  });

  it('makes one attempt only with maxAttempts 1, even for a 503', async () => {
    const fake = await brokers.start();
    answerEachMessage(fake, () => ({ code: 503, message: 'between owners' }));
    const producer = createProducer(fake.endpoint, { maxAttempts: 1 });
    const error = await rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    expect(error).toMatchObject({ code: 503 });
    expect(fake.framesOf('send')).toHaveLength(1);
  });

  it('stops a 503 backoff when the send is aborted', async () => {
    const fake = await brokers.start();
    answerEachMessage(fake, () => ({ code: 503, message: 'between owners' }));
    const producer = createProducer(fake.endpoint);
    await producer.start();
    const controller = new AbortController();
    const sent = producer.send({ topic: 'orders', body: 'x' }, { signal: controller.signal });
    await vi.waitFor(() => expect(fake.framesOf('send').length).toBeGreaterThanOrEqual(2));
    controller.abort();
    expect(await rejectionOf(sent)).toMatchObject({ code: 'ABORTED' });
    const framesAtAbort = fake.framesOf('send').length;
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(fake.framesOf('send')).toHaveLength(framesAtAbort);
  });

  it('gives up on 530 after maxAttempts with the 530', async () => {
    const fake = await brokers.start();
    answerEachMessage(fake, () => ({ code: 530, message: 'throttled' }));
    const producer = createProducer(fake.endpoint, { maxAttempts: 2 });
    const error = await rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    expect(error).toMatchObject({ code: 530 });
    expect(fake.framesOf('send')).toHaveLength(2);
  });

  it.each([400, 401, 403, 404, 409, 413, 599])('fails %i at once, without a retry', async (code) => {
    const fake = await brokers.start();
    answerEachMessage(fake, () => ({ code, message: 'no' }));
    const producer = createProducer(fake.endpoint);
    const error = await rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    expect(error).toMatchObject({ code, retryable: false });
    expect(fake.framesOf('send')).toHaveLength(1);
  });

  it('retries a timed-out attempt, and rejects with TIMEOUT when every attempt times out', async () => {
    const fake = await brokers.start();
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
    expect(messageIdsByFrame(fake.framesOf('send'))).toEqual([[result.messageId], [result.messageId]]);

    fake.on('send', () => {});
    const error = await rejectionOf(producer.send({ topic: 'orders', body: 'y' }));
    expect(error).toMatchObject({ name: 'ClientError', code: 'TIMEOUT', retryable: true });
    expect(fake.framesOf('send')).toHaveLength(2 + 3);
  });

  it('holds sends made while reconnecting and sends them once reconnected', async () => {
    const fake = await brokers.start();
    const producer = createProducer(fake.endpoint);
    await producer.start();
    const disconnected = nextStatus(producer, 'disconnected');
    fake.dropAll();
    await disconnected;
    const result = await producer.send({ topic: 'orders', body: 'x' });
    expect(fake.sessions).toHaveLength(2);
    expect(messageIdsByFrame(fake.framesOf('send'))).toEqual([[result.messageId]]);
  });
});
