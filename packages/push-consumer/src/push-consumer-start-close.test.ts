import { gate, pushNumberedMessages, receiptHandlesSent } from '@ricochet/client-testkit';
import { describe, expect, it } from 'vitest';
import { ConsumeResult, type ConsumeResultValue } from './consume-result.js';
import type { MessageListener } from './listener-pool.js';
import { pushConsumersPerTest } from './push-consumer.fixture.js';
import { PushConsumer } from './push-consumer.js';
import type { PushConsumerOptions } from './push-consumer-options.js';

const { brokers, createConsumer } = pushConsumersPerTest();

describe('start', () => {
  it('subscribes with the group, subscriptions and initial credit window, once, and resolves when subscribed', async () => {
    const fake = await brokers.start();
    const consumer = createConsumer(fake.endpoint, {
      subscriptions: { orders: 'paid || refunded', '%DLQ%billing': '*' },
      maxCachedMessages: 64,
      concurrency: 8,
      listener: () => ConsumeResult.SUCCESS,
    });
    await Promise.all([consumer.start(), consumer.start()]);
    await consumer.start();
    expect(fake.framesOf('subscribe')).toEqual([
      {
        type: 'subscribe',
        id: expect.any(Number),
        group: 'billing',
        subscriptions: { orders: 'paid || refunded', '%DLQ%billing': '*' },
        // The window starts at twice `concurrency` (at most maxCachedMessages) and grows from there.
        maxCachedMessages: 16,
        maxCachedBytes: 64 * 1024 * 1024,
      },
    ]);
    expect(consumer.connectionStatus.state).toBe('connected');
  });

  it("rejects with the broker's code when subscribe is refused, and may be started again", async () => {
    const fake = await brokers.start();
    fake.on('subscribe', (frame, session) =>
      session.send({
        type: 'error',
        id: frame.id,
        code: 404,
        message: 'group billing does not exist',
        details: { group: 'billing' },
      }),
    );
    const consumer = createConsumer(fake.endpoint, { listener: () => ConsumeResult.SUCCESS });
    await expect(consumer.start()).rejects.toMatchObject({
      code: 404,
      retryable: false,
      details: { group: 'billing' },
    });
    fake.on('subscribe', undefined);
    await consumer.start();
    expect(fake.framesOf('subscribe')).toHaveLength(2);
  });

  it('subscribes again when the connection drops before subscribed, and resolves then', async () => {
    const fake = await brokers.start();
    fake.on('subscribe', (_, session) => {
      fake.on('subscribe', undefined);
      session.drop();
    });
    const consumer = createConsumer(fake.endpoint, { listener: () => ConsumeResult.SUCCESS });
    await consumer.start();
    expect(fake.framesOf('subscribe')).toHaveLength(2);
    expect(fake.sessions).toHaveLength(2);
  });

  it('stops waiting when the signal fires', async () => {
    const fake = await brokers.start();
    fake.on('subscribe', () => {});
    const consumer = createConsumer(fake.endpoint, {
      closeTimeoutMs: 20,
      listener: () => ConsumeResult.SUCCESS,
    });
    const controller = new AbortController();
    const starting = consumer.start({ signal: controller.signal });
    await fake.waitForFrames('subscribe');
    controller.abort();
    await expect(starting).rejects.toMatchObject({ code: 'ABORTED' });
  });

  it.each<[string, Partial<PushConsumerOptions>]>([
    ['a bad group', { group: 'no spaces' }],
    ['no subscriptions', { subscriptions: {} }],
    ['a bad topic', { subscriptions: { 'or ders': '*' } }],
    ['a bad tag expression', { subscriptions: { orders: 'a || *' } }],
    ['maxCachedMessages 0', { maxCachedMessages: 0 }],
    ['maxCachedMessages 65 537', { maxCachedMessages: 65_537 }],
    ['concurrency 0', { concurrency: 0 }],
    ['concurrency 1.5', { concurrency: 1.5 }],
    ['consumptionTimeoutMs 0', { consumptionTimeoutMs: 0 }],
    ['consumptionTimeoutMs over 24 h', { consumptionTimeoutMs: 24 * 60 * 60_000 + 1 }],
    ['closeTimeoutMs -1', { closeTimeoutMs: -1 }],
    ['no listener', { listener: undefined as unknown as MessageListener }],
    ['a bad endpoint', { endpoint: 'http://127.0.0.1:1' }],
    ['an empty list of endpoints', { endpoint: [] }],
    ['a request/response endpoint in a list', { endpoint: ['ws://127.0.0.1:1', 'https://127.0.0.1:2'] }],
  ])('refuses %s at construction with 400', (_, options) => {
    expect(
      () =>
        new PushConsumer({
          endpoint: 'ws://127.0.0.1:1',
          group: 'billing',
          subscriptions: { orders: '*' },
          listener: () => ConsumeResult.SUCCESS,
          ...options,
        }),
    ).toThrow(expect.objectContaining({ name: 'ClientError', code: 400 }));
  });
});

describe('close', () => {
  it('unsubscribes, releases unstarted messages, waits for running listeners and sends their results', async () => {
    const fake = await brokers.start();
    const running = gate<ConsumeResultValue>();
    const started = gate();
    const consumer = createConsumer(fake.endpoint, {
      concurrency: 1,
      listener: () => {
        started.open();
        return running.promise;
      },
    });
    await consumer.start();
    pushNumberedMessages(fake, 4);
    await started.promise;
    const closing = consumer.close();
    expect(consumer.close()).toBe(closing);
    // The credit window of one listener is 2: m2 and m3 were never delivered.
    expect(await receiptHandlesSent(fake, 'release', 1)).toEqual(['lease-2']);
    expect(fake.framesOf('ack')).toEqual([]);
    running.open(ConsumeResult.SUCCESS);
    await closing;
    expect(fake.frames.map((frame) => frame.type)).toEqual(['subscribe', 'unsubscribe', 'release', 'ack']);
    expect(fake.framesOf('ack')[0]?.receiptHandles).toEqual(['lease-1']);
    // Released after the unsubscribe: ready again for the group, not delivered back to this consumer.
    expect(fake.pushReady.map((message) => message.messageId)).toEqual(['m1', 'm2', 'm3']);
    expect(consumer.connectionStatus.state).toBe('closed');
    await expect(consumer.start()).rejects.toMatchObject({ code: 'CLIENT_CLOSED' });
  });

  it('waits no longer than closeTimeoutMs; the broker releases what is still running (C2)', async () => {
    const fake = await brokers.start();
    const started = gate<AbortSignal>();
    const consumer = createConsumer(fake.endpoint, {
      closeTimeoutMs: 50,
      listener: (_, context) => {
        started.open(context.signal);
        return new Promise<ConsumeResultValue>(() => {});
      },
    });
    await consumer.start();
    pushNumberedMessages(fake, 1);
    const signal = await started.promise;
    const startedAt = performance.now();
    await consumer.close();
    const elapsedMs = performance.now() - startedAt;
    expect(elapsedMs).toBeGreaterThanOrEqual(45);
    expect(elapsedMs).toBeLessThan(1_000);
    expect(signal.aborted).toBe(true);
    expect(fake.framesOf('ack')).toEqual([]);
    expect(fake.framesOf('nack')).toEqual([]);
    // The fake's own close handler (C2) was registered first, so it has run by now.
    await fake.sessions[0]?.closed;
    expect(fake.pushReady.map((message) => message.messageId)).toEqual(['m0']);
  });

  it('close({ timeoutMs }) overrides the deprecated closeTimeoutMs option', async () => {
    const fake = await brokers.start();
    const started = gate<AbortSignal>();
    const consumer = createConsumer(fake.endpoint, {
      closeTimeoutMs: 60_000,
      listener: (_, context) => {
        started.open(context.signal);
        return new Promise<ConsumeResultValue>(() => {});
      },
    });
    await consumer.start();
    pushNumberedMessages(fake, 1);
    const signal = await started.promise;
    const startedAt = performance.now();
    await consumer.close({ timeoutMs: 50 });
    const elapsedMs = performance.now() - startedAt;
    expect(elapsedMs).toBeGreaterThanOrEqual(45);
    expect(elapsedMs).toBeLessThan(1_000);
    expect(signal.aborted).toBe(true);
  });

  it('refuses a close timeoutMs out of range with 400, and stays open', async () => {
    const fake = await brokers.start();
    const consumer = createConsumer(fake.endpoint, { listener: () => ConsumeResult.SUCCESS });
    await consumer.start();
    await expect(consumer.close({ timeoutMs: -1 })).rejects.toMatchObject({ code: 400 });
    expect(consumer.connectionStatus.state).toBe('connected');
    await consumer.close({ timeoutMs: 0 });
    expect(consumer.connectionStatus.state).toBe('closed');
  });

  it('rejects a pending start with CLIENT_CLOSED', async () => {
    const fake = await brokers.start();
    fake.on('subscribe', () => {});
    const consumer = createConsumer(fake.endpoint, {
      closeTimeoutMs: 20,
      listener: () => ConsumeResult.SUCCESS,
    });
    const starting = expect(consumer.start()).rejects.toMatchObject({
      code: 'CLIENT_CLOSED',
      retryable: false,
    });
    await fake.waitForFrames('subscribe');
    await consumer.close();
    await starting;
  });

  it('closes through await using', async () => {
    const fake = await brokers.start();
    let observed: PushConsumer | undefined;
    {
      await using consumer = new PushConsumer({
        endpoint: fake.endpoint,
        group: 'billing',
        subscriptions: { orders: '*' },
        listener: () => ConsumeResult.SUCCESS,
      });
      await consumer.start();
      observed = consumer;
    }
    expect(observed.connectionStatus.state).toBe('closed');
    expect(fake.framesOf('unsubscribe')).toHaveLength(1);
  });
});
