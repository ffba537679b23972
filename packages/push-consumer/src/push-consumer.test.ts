import type { ReceivedMessage } from '@ricochet/client';
import { FAST_BACKOFF, FakeBroker, nextStatus } from '@ricochet/client-testkit';
import type { DeliveredMessage } from '@ricochet/protocol';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConsumeResult, type ConsumeResultValue } from './consume-result.js';
import type { MessageListener } from './listener-pool.js';
import { PushConsumer } from './push-consumer.js';
import type { PushConsumerOptions } from './push-consumer-options.js';

let broker: FakeBroker | undefined;
const consumers: PushConsumer[] = [];

afterEach(async () => {
  await Promise.all(consumers.splice(0).map((consumer) => consumer.close()));
  await broker?.close();
  broker = undefined;
});

async function startBroker(): Promise<FakeBroker> {
  broker = await FakeBroker.start();
  return broker;
}

function createConsumer(
  endpoint: string,
  options: Partial<PushConsumerOptions> & { listener: MessageListener },
): PushConsumer {
  const consumer = new PushConsumer({
    endpoint,
    group: 'billing',
    subscriptions: { orders: '*' },
    reconnectBackoff: FAST_BACKOFF,
    closeTimeoutMs: 1_000,
    onListenerError: () => {},
    onProtocolError: () => {},
    ...options,
  });
  consumers.push(consumer);
  return consumer;
}

/** Ready `count` messages `m0`, `m1`, … for push; the fake leases them as `lease-1`, `lease-2`, … */
function pushMessages(
  fake: FakeBroker,
  count: number,
  fields: (index: number) => Partial<DeliveredMessage> = () => ({}),
) {
  const messages = Array.from({ length: count }, (_, index) =>
    FakeBroker.deliveredMessage({ messageId: `m${index}`, offset: index, ...fields(index) }),
  );
  fake.push(...messages);
}

/** Every receipt handle of `type` frames, once at least `count` have arrived. */
async function settledHandles(fake: FakeBroker, type: 'ack' | 'release', count: number): Promise<string[]> {
  // Each frame carries at least one handle, so `count` frames are always enough.
  for (let frames = 1; frames <= count; frames++) {
    const handles = (await fake.waitForFrames(type, frames)).flatMap((frame) => frame.receiptHandles);
    if (handles.length >= count) return handles;
  }
  throw new Error('unreachable');
}

async function nackItems(fake: FakeBroker, count: number) {
  for (let frames = 1; frames <= count; frames++) {
    const items = (await fake.waitForFrames('nack', frames)).flatMap((frame) => frame.items);
    if (items.length >= count) return items;
  }
  throw new Error('unreachable');
}

async function grantedCredits(fake: FakeBroker, total: number): Promise<number> {
  for (let frames = 1; frames <= total; frames++) {
    const credits = (await fake.waitForFrames('credit', frames)).reduce(
      (sum, frame) => sum + frame.credits,
      0,
    );
    if (credits >= total) return credits;
  }
  throw new Error('unreachable');
}

/** A promise the test settles from outside. */
function gate<T = void>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

describe('start', () => {
  it('subscribes with the group, subscriptions and maxCachedMessages, once, and resolves when subscribed', async () => {
    const fake = await startBroker();
    const consumer = createConsumer(fake.endpoint, {
      subscriptions: { orders: 'paid || refunded', '%DLQ%billing': '*' },
      maxCachedMessages: 64,
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
        maxCachedMessages: 64,
      },
    ]);
    expect(consumer.connectionStatus.state).toBe('connected');
  });

  it("rejects with the broker's code when subscribe is refused, and may be started again", async () => {
    const fake = await startBroker();
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
    const fake = await startBroker();
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
    const fake = await startBroker();
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

describe('results (P2)', () => {
  it('hands each delivery to the listener and acks them in batches', async () => {
    const fake = await startBroker();
    // Ready before the subscription: the deliveries follow `subscribed` in the same tick.
    pushMessages(fake, 10, (index) => ({ tag: 'paid', deliveryAttempt: index === 0 ? 3 : 1 }));
    const seen: ReceivedMessage[] = [];
    const consumer = createConsumer(fake.endpoint, {
      listener: async (message) => {
        seen.push(message);
        return ConsumeResult.SUCCESS;
      },
    });
    await consumer.start();
    const handles = await settledHandles(fake, 'ack', 10);
    expect(handles.toSorted()).toEqual(
      Array.from({ length: 10 }, (_, index) => `lease-${index + 1}`).toSorted(),
    );
    // One deliver frame, listeners finishing within the flush delay: one ack frame.
    expect(fake.framesOf('ack')).toHaveLength(1);
    expect(seen.map((message) => message.messageId)).toEqual(
      Array.from({ length: 10 }, (_, index) => `m${index}`),
    );
    expect(seen[0]).toMatchObject({ topic: 'orders', tag: 'paid', deliveryAttempt: 3, offset: 0 });
    expect(seen[0]?.text()).toBe('{"orderId":1042}');
    expect(fake.framesOf('nack')).toEqual([]);
  });

  it('nacks FAILURE, a throw and retryAfter with their reasons and delay', async () => {
    const fake = await startBroker();
    const onListenerError = vi.fn();
    const results: Record<string, () => ConsumeResultValue> = {
      m0: () => ConsumeResult.FAILURE,
      m1: () => {
        throw new Error('payment service answered 503');
      },
      m2: () => ConsumeResult.retryAfter(5_000),
      m3: () => ConsumeResult.SUCCESS,
    };
    const consumer = createConsumer(fake.endpoint, {
      onListenerError,
      listener: async (message) => {
        const result = results[message.messageId];
        if (result === undefined) throw new Error(`unexpected ${message.messageId}`);
        return result();
      },
    });
    await consumer.start();
    pushMessages(fake, 4);
    const items = await nackItems(fake, 3);
    expect(items).toEqual([
      { receiptHandle: 'lease-1', reason: 'the listener returned FAILURE' },
      { receiptHandle: 'lease-2', reason: 'payment service answered 503' },
      {
        receiptHandle: 'lease-3',
        reason: 'the listener asked for a retry after 5000 ms',
        retryAfterMs: 5_000,
      },
    ]);
    expect(await settledHandles(fake, 'ack', 1)).toEqual(['lease-4']);
    expect(onListenerError).toHaveBeenCalledExactlyOnceWith(
      new Error('payment service answered 503'),
      expect.objectContaining({ messageId: 'm1' }),
    );
  });

  it("fails a listener still running after consumptionTimeoutMs with 'consumption timeout'", async () => {
    const fake = await startBroker();
    const release = gate<ConsumeResultValue>();
    const onListenerError = vi.fn();
    let signal: AbortSignal | undefined;
    const consumer = createConsumer(fake.endpoint, {
      consumptionTimeoutMs: 50,
      onListenerError,
      listener: (_, context) => {
        signal = context.signal;
        return release.promise;
      },
    });
    await consumer.start();
    pushMessages(fake, 1);
    expect(await nackItems(fake, 1)).toEqual([{ receiptHandle: 'lease-1', reason: 'consumption timeout' }]);
    expect(onListenerError).toHaveBeenCalledExactlyOnceWith(
      expect.objectContaining({ code: 'TIMEOUT' }),
      expect.objectContaining({ messageId: 'm0' }),
    );
    expect(signal?.aborted).toBe(true);
    // The late SUCCESS is not sent: the delivery has already failed.
    release.open(ConsumeResult.SUCCESS);
    await consumer.close();
    expect(fake.framesOf('ack')).toEqual([]);
  });

  it('reports a result the broker refuses (410 after its own timeout) and carries on', async () => {
    const fake = await startBroker();
    fake.on('ack', (frame, session) => {
      fake.on('ack', undefined);
      session.send({
        type: 'settled',
        id: frame.id,
        failures: [{ index: 0, code: 410, message: 'lease 1 expired' }],
      });
    });
    const onError = vi.fn();
    const consumer = createConsumer(fake.endpoint, { onError, listener: async () => ConsumeResult.SUCCESS });
    await consumer.start();
    pushMessages(fake, 1);
    await fake.waitForFrames('ack');
    pushMessages(fake, 1);
    // The refused handle still leaves the cache: its credit comes back, and the next message flows.
    await fake.waitForFrames('ack', 2);
    expect(onError).toHaveBeenCalledExactlyOnceWith(
      expect.objectContaining({ name: 'BrokerError', code: 410, details: { messageId: 'm0' } }),
    );
    expect(await grantedCredits(fake, 2)).toBe(2);
  });
});

describe('flow control', () => {
  it('never runs more than `concurrency` listeners at once', async () => {
    const fake = await startBroker();
    let running = 0;
    let maxRunning = 0;
    const consumer = createConsumer(fake.endpoint, {
      concurrency: 3,
      listener: async () => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        await new Promise((resolve) => setImmediate(resolve));
        running -= 1;
        return ConsumeResult.SUCCESS;
      },
    });
    await consumer.start();
    pushMessages(fake, 30);
    expect(await settledHandles(fake, 'ack', 30)).toHaveLength(30);
    expect(maxRunning).toBe(3);
  });

  it('holds at most maxCachedMessages unsettled, granting credit as results are sent', async () => {
    const fake = await startBroker();
    const consumer = createConsumer(fake.endpoint, {
      maxCachedMessages: 5,
      concurrency: 2,
      listener: async () => ConsumeResult.SUCCESS,
    });
    await consumer.start();
    pushMessages(fake, 23);
    expect(await settledHandles(fake, 'ack', 23)).toHaveLength(23);
    expect(await grantedCredits(fake, 23)).toBe(23);
    const [subscription] = fake.subscriptions;
    expect(subscription?.maxUnsettled).toBe(5);
    expect(subscription?.credits).toBe(5);
    expect(
      fake.framesOf('credit').every((frame) => frame.subscriptionId === subscription?.subscriptionId),
    ).toBe(true);
  });

  it('processes the messages of one message group one at a time, in order (P5)', async () => {
    const fake = await startBroker();
    const running = new Map<string, number>();
    const order: string[] = [];
    let overlap = false;
    const consumer = createConsumer(fake.endpoint, {
      concurrency: 8,
      listener: async (message) => {
        const group = message.messageGroup ?? '';
        running.set(group, (running.get(group) ?? 0) + 1);
        if ((running.get(group) ?? 0) > 1) overlap = true;
        order.push(message.messageId);
        await new Promise((resolve) => setImmediate(resolve));
        running.set(group, (running.get(group) ?? 0) - 1);
        return ConsumeResult.SUCCESS;
      },
    });
    await consumer.start();
    pushMessages(fake, 12, (index) => ({ messageGroup: `g${index % 3}` }));
    await settledHandles(fake, 'ack', 12);
    expect(overlap).toBe(false);
    for (const group of ['g0', 'g1', 'g2']) {
      const ids = order.filter((id) => Number(id.slice(1)) % 3 === Number(group.slice(1)));
      expect(ids).toEqual([...ids].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))));
    }
  });

  it('releases deliveries for a subscription it does not know, and stops that subscription', async () => {
    const fake = await startBroker();
    const listener = vi.fn(() => ConsumeResult.SUCCESS);
    const consumer = createConsumer(fake.endpoint, { listener });
    await consumer.start();
    const stray = fake.lease(FakeBroker.deliveredMessage({ messageId: 'stray' }));
    fake.sessions[0]?.send({ type: 'deliver', subscriptionId: 99, messages: [stray] });
    expect(await settledHandles(fake, 'release', 1)).toEqual([stray.receiptHandle]);
    const [unsubscribe] = await fake.waitForFrames('unsubscribe');
    expect(unsubscribe).toMatchObject({ subscriptionId: 99 });
    expect(listener).not.toHaveBeenCalled();
  });
});

describe('close', () => {
  it('unsubscribes, releases unstarted messages, waits for running listeners and sends their results', async () => {
    const fake = await startBroker();
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
    pushMessages(fake, 4);
    await started.promise;
    const closing = consumer.close();
    expect(consumer.close()).toBe(closing);
    expect(await settledHandles(fake, 'release', 3)).toEqual(['lease-2', 'lease-3', 'lease-4']);
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
    const fake = await startBroker();
    const started = gate<AbortSignal>();
    const consumer = createConsumer(fake.endpoint, {
      closeTimeoutMs: 50,
      listener: (_, context) => {
        started.open(context.signal);
        return new Promise<ConsumeResultValue>(() => {});
      },
    });
    await consumer.start();
    pushMessages(fake, 1);
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

  it('rejects a pending start with CLIENT_CLOSED', async () => {
    const fake = await startBroker();
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
    const fake = await startBroker();
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

describe('reconnect (C1, C2)', () => {
  it('subscribes again, drops the stale cache and sends no result for the old session', async () => {
    const fake = await startBroker();
    const first = gate<ConsumeResultValue>();
    const firstStarted = gate();
    const calls: string[] = [];
    const consumer = createConsumer(fake.endpoint, {
      concurrency: 1,
      listener: (message) => {
        calls.push(`${message.messageId}@${message.deliveryAttempt}`);
        if (calls.length === 1) {
          firstStarted.open();
          return first.promise;
        }
        return ConsumeResult.SUCCESS;
      },
    });
    await consumer.start();
    pushMessages(fake, 3);
    await firstStarted.promise;
    const disconnected = nextStatus(consumer, 'disconnected');
    fake.dropAll();
    await disconnected;
    // The new session's subscription gets the released messages again, with new handles.
    await fake.waitForFrames('subscribe', 2);
    first.open(ConsumeResult.SUCCESS);
    const handles = await settledHandles(fake, 'ack', 3);
    expect(handles).toEqual(['lease-4', 'lease-5', 'lease-6']);
    // m1 and m2 of the old session were never started; m0's old result was never sent.
    expect(calls).toEqual(['m0@1', 'm0@1', 'm1@1', 'm2@1']);
    const [, subscription] = fake.subscriptions;
    expect(subscription?.session).toBe(fake.sessions[1]);
    expect(
      fake.framesOf('credit').every((frame) => frame.subscriptionId === subscription?.subscriptionId),
    ).toBe(true);
  });

  it('retries a retryable refusal of the new subscribe, reporting it', async () => {
    const fake = await startBroker();
    const onError = vi.fn();
    const consumer = createConsumer(fake.endpoint, { onError, listener: () => ConsumeResult.SUCCESS });
    await consumer.start();
    fake.on('subscribe', (frame, session) => {
      fake.on('subscribe', undefined);
      session.send({ type: 'error', id: frame.id, code: 503, message: 'warming up' });
    });
    fake.dropAll();
    await fake.waitForFrames('subscribe', 3);
    pushMessages(fake, 1);
    expect(await settledHandles(fake, 'ack', 1)).toEqual(['lease-1']);
    expect(onError).toHaveBeenCalledExactlyOnceWith(expect.objectContaining({ code: 503, retryable: true }));
  });
});
