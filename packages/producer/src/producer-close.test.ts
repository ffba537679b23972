import { ClientError } from '@ricochet/client';
import { answerEachMessage, FAST_BACKOFF, holdSendAnswers, rejectionOf } from '@ricochet/client-testkit';
import { describe, expect, it } from 'vitest';
import { producersPerTest } from './producer.fixture.js';
import { Producer } from './producer.js';

const { brokers, createProducer } = producersPerTest();

describe('abort and close', () => {
  it('rejects with ABORTED, before sending or while backing off, and stops retrying', async () => {
    const fake = await brokers.start();
    answerEachMessage(fake, () => ({ code: 530, message: 'throttled' }));
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
    const fake = await brokers.start();
    const answers = holdSendAnswers(fake);
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
    const fake = await brokers.start();
    answerEachMessage(fake, () => ({ code: 530, message: 'throttled' }));
    const producer = createProducer(fake.endpoint, {
      retryBackoff: { initialMs: 60_000, maxMs: 60_000, jitter: 0 },
    });
    const sending = rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    await fake.waitForFrames('send');
    await producer.close({ drainTimeoutMs: 10 });
    expect(await sending).toMatchObject({ code: 'CLIENT_CLOSED', retryable: false });
  });

  it.each([
    ['timeoutMs', { timeoutMs: 10 }],
    ['timeoutMs over the deprecated drainTimeoutMs', { timeoutMs: 10, drainTimeoutMs: 60_000 }],
  ])('close({ %s }) fails what is still pending after it with CLIENT_CLOSED', async (_, options) => {
    const fake = await brokers.start();
    answerEachMessage(fake, () => ({ code: 530, message: 'throttled' }));
    const producer = createProducer(fake.endpoint, {
      retryBackoff: { initialMs: 60_000, maxMs: 60_000, jitter: 0 },
    });
    const sending = rejectionOf(producer.send({ topic: 'orders', body: 'x' }));
    await fake.waitForFrames('send');
    await producer.close(options);
    expect(await sending).toMatchObject({ code: 'CLIENT_CLOSED', retryable: false });
  });

  it('closes through await using', async () => {
    const fake = await brokers.start();
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
    expect(() => new Producer({ endpoint: 'ws://127.0.0.1:1', sendTimeoutMs: 0 })).toThrow(ClientError);
    expect(() => new Producer({ endpoint: 'ws://127.0.0.1:1', sendTimeoutMs: Number.NaN })).toThrow(
      ClientError,
    );
    expect(() => new Producer({ endpoint: 'ftp://127.0.0.1:1' })).toThrow(ClientError);
    expect(() => new Producer({ endpoint: [] })).toThrow(expect.objectContaining({ code: 400 }));
    expect(() => new Producer({ endpoint: ['ws://127.0.0.1:1', 'ftp://127.0.0.1:2'] })).toThrow(
      expect.objectContaining({ code: 400, message: expect.stringContaining("'ftp://127.0.0.1:2'") }),
    );
    expect(() => new Producer({ endpoint: 'ws://127.0.0.1:1', retryBackoff: { initialMs: -1 } })).toThrow(
      RangeError,
    );
  });
});
