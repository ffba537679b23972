import { Connection, ReceivedMessage } from '@ricochet/client';
import { nextStatus, readyNumberedMessages, rejectionOf } from '@ricochet/client-testkit';
import { describe, expect, it, vi } from 'vitest';
import { simpleConsumersPerTest } from './simple-consumer.fixture.js';
import { SimpleConsumer } from './simple-consumer.js';

const { brokers, createConsumer } = simpleConsumersPerTest();

describe('start', () => {
  it('registers the group and its subscriptions, so the position of the group is taken now', async () => {
    const fake = await brokers.start();
    const consumer = createConsumer(fake.endpoint, { subscriptions: { orders: 'paid', refunds: '*' } });
    await consumer.start();
    expect(fake.framesOf('register')).toEqual([
      expect.objectContaining({ group: 'billing', subscriptions: { orders: 'paid', refunds: '*' } }),
    ]);
    await consumer.start();
    expect(fake.framesOf('register')).toHaveLength(1);
  });

  it('rejects with the code of the broker when it refuses the registration, and may be tried again', async () => {
    const fake = await brokers.start();
    let refusals = 1;
    fake.on('register', (frame, session) => {
      if (refusals-- > 0) {
        session.send({ type: 'error', id: frame.id, code: 404, message: 'group "billing" does not exist' });
      } else session.send({ type: 'ok', id: frame.id });
    });
    const consumer = createConsumer(fake.endpoint);
    expect(await rejectionOf(consumer.start())).toMatchObject({ code: 404 });
    await consumer.start();
    expect(fake.framesOf('register')).toHaveLength(2);
  });
});

describe('receive (S2)', () => {
  it('leases messages with the group, subscriptions and durations it was given', async () => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 3);
    const consumer = createConsumer(fake.endpoint, {
      subscriptions: { orders: 'paid || refunded', '%DLQ%billing': '*' },
      awaitDurationMs: 20_000,
    });
    await consumer.start();
    const messages = await consumer.receive(2, 30_000);
    expect(fake.framesOf('receive')).toEqual([
      {
        type: 'receive',
        id: expect.any(Number),
        group: 'billing',
        subscriptions: { orders: 'paid || refunded', '%DLQ%billing': '*' },
        maxMessages: 2,
        invisibleDurationMs: 30_000,
        awaitDurationMs: 20_000,
      },
    ]);
    expect(messages).toHaveLength(2);
    expect(messages[0]).toBeInstanceOf(ReceivedMessage);
    expect(messages.map((message) => [message.messageId, message.offset, message.tag])).toEqual([
      ['0193a1f4c2d87b3e9f6a5c4b3e2d1f00', 0, 'paid'],
      ['0193a1f4c2d87b3e9f6a5c4b3e2d1f01', 1, 'paid'],
    ]);
    expect(await consumer.receive(32, 10)).toHaveLength(1);
    expect(await consumer.receive(32, 10)).toEqual([]);
  });

  it('gives a receive awaitDurationMs + requestTimeoutMs to be answered', async () => {
    const fake = await brokers.start();
    const request = vi.spyOn(Connection.prototype, 'request');
    const consumer = createConsumer(fake.endpoint, { awaitDurationMs: 20_000, requestTimeoutMs: 30_000 });
    await consumer.receive(1, 1_000);
    expect(request.mock.calls[0]?.[1]).toMatchObject({ timeoutMs: 50_000 });
    // Never answered: the receive times out at that bound, a retryable TIMEOUT.
    fake.on('receive', () => {});
    const quick = createConsumer(fake.endpoint, { awaitDurationMs: 20, requestTimeoutMs: 20 });
    expect(await rejectionOf(quick.receive(1, 1_000))).toMatchObject({ code: 'TIMEOUT', retryable: true });
  });

  it('starts by itself and resumes after a reconnect', async () => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
    const consumer = createConsumer(fake.endpoint);
    const disconnected = nextStatus(consumer, 'disconnected');
    expect(await consumer.receive(1, 1_000)).toHaveLength(1);
    fake.dropAll();
    await disconnected;
    readyNumberedMessages(fake, 1);
    expect(await consumer.receive(1, 1_000)).toHaveLength(1);
    expect(fake.sessions).toHaveLength(2);
  });

  it('rejects with ABORTED when the signal fires, and with CLIENT_CLOSED when closed meanwhile', async () => {
    const fake = await brokers.start();
    fake.on('receive', () => {});
    const consumer = createConsumer(fake.endpoint, { awaitDurationMs: 20_000 });
    await consumer.start();
    const controller = new AbortController();
    const aborted = rejectionOf(consumer.receive(1, 1_000, { signal: controller.signal }));
    await fake.waitForFrames('receive');
    controller.abort();
    expect(await aborted).toMatchObject({ code: 'ABORTED' });

    const waiting = rejectionOf(consumer.receive(1, 1_000, { signal: new AbortController().signal }));
    await fake.waitForFrames('receive', 2);
    const startedAt = performance.now();
    await consumer.close();
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    expect(await waiting).toMatchObject({ code: 'CLIENT_CLOSED', retryable: false });
    expect((await rejectionOf(consumer.receive(1, 1_000))).code).toBe('CLIENT_CLOSED');
  });
});

describe('receive through a handover', () => {
  it('retries a receive answered 503 (between owners) after a short backoff, and leases once answered', async () => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
    let attempt = 0;
    fake.on('receive', (frame, session) => {
      attempt += 1;
      if (attempt <= 2) session.send({ type: 'error', id: frame.id, code: 503, message: 'between owners' });
      else
        session.send({
          type: 'messages',
          id: frame.id,
          messages: fake.ready.splice(0, frame.maxMessages).map((message) => fake.lease(message)),
        });
    });
    const consumer = createConsumer(fake.endpoint);
    const startedAt = performance.now();
    expect(await consumer.receive(1, 1_000)).toHaveLength(1);
    // 25 ms, then 50 ms, each ±20 %.
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(60 - 2);
    expect(fake.framesOf('receive')).toHaveLength(3);
  });

  it('does not retry a receive refused with another retryable code', async () => {
    const fake = await brokers.start();
    fake.on('receive', (frame, session) =>
      session.send({ type: 'error', id: frame.id, code: 500, message: 'broken' }),
    );
    const consumer = createConsumer(fake.endpoint);
    expect(await rejectionOf(consumer.receive(1, 1_000))).toMatchObject({ code: 500 });
    expect(fake.framesOf('receive')).toHaveLength(1);
  });

  it('ends a receive waiting out a 503 backoff with CLIENT_CLOSED when closed', async () => {
    const fake = await brokers.start();
    fake.on('receive', (frame, session) =>
      session.send({ type: 'error', id: frame.id, code: 503, message: 'between owners' }),
    );
    const consumer = createConsumer(fake.endpoint);
    const waiting = rejectionOf(consumer.receive(1, 1_000));
    await fake.waitForFrames('receive', 2);
    await consumer.close();
    expect(await waiting).toMatchObject({ code: 'CLIENT_CLOSED' });
  });
});

describe('close', () => {
  it.each([
    ['timeoutMs', { timeoutMs: 10 }],
    ['drainTimeoutMs (deprecated)', { drainTimeoutMs: 10 }],
    ['timeoutMs over drainTimeoutMs', { timeoutMs: 10, drainTimeoutMs: 60_000 }],
  ])('close({ %s }) fails an ack still unanswered after it with CLIENT_CLOSED', async (_, options) => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
    fake.on('ack', () => {});
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    const acking = rejectionOf(consumer.ack(message));
    await fake.waitForFrames('ack');
    const startedAt = performance.now();
    await consumer.close(options);
    expect(performance.now() - startedAt).toBeLessThan(1_000);
    expect(await acking).toMatchObject({ code: 'CLIENT_CLOSED' });
  });

  it('lets an in-flight ack finish, then refuses new calls', async () => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
    const answers: Array<() => void> = [];
    fake.on('ack', (frame, session) => {
      answers.push(() => session.send({ type: 'settled', id: frame.id, failures: [] }));
    });
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(1, 1_000);
    if (message === undefined) throw new Error('no message');
    const acking = consumer.ack(message);
    await fake.waitForFrames('ack');
    const closing = consumer.close();
    expect(consumer.close()).toBe(closing);
    for (const answer of answers) answer();
    await expect(acking).resolves.toBeUndefined();
    await closing;
    expect(consumer.connectionStatus.state).toBe('closed');
    expect((await rejectionOf(consumer.ack(message))).code).toBe('CLIENT_CLOSED');
  });

  it('closes through await using', async () => {
    const fake = await brokers.start();
    let observed: SimpleConsumer | undefined;
    {
      await using consumer = new SimpleConsumer({
        endpoint: fake.endpoint,
        group: 'billing',
        subscriptions: { orders: '*' },
      });
      await consumer.start();
      observed = consumer;
    }
    expect(observed.connectionStatus.state).toBe('closed');
  });
});
