import type { ReceivedMessage } from '@ricochet/client';
import {
  creditsGranted,
  FakeBroker,
  gate,
  nackItemsSent,
  pushNumberedMessages,
  receiptHandlesSent,
} from '@ricochet/client-testkit';
import { describe, expect, it, vi } from 'vitest';
import { ConsumeResult, type ConsumeResultValue } from './consume-result.js';
import { pushConsumersPerTest } from './push-consumer.fixture.js';

const { brokers, createConsumer } = pushConsumersPerTest();

describe('results (P2)', () => {
  it('hands each delivery to the listener and acks them in batches', async () => {
    const fake = await brokers.start();
    // Ready before the subscription: the deliveries follow `subscribed` in the same tick.
    pushNumberedMessages(fake, 10, (index) => ({ tag: 'paid', deliveryAttempt: index === 0 ? 3 : 1 }));
    const seen: ReceivedMessage[] = [];
    const consumer = createConsumer(fake.endpoint, {
      listener: async (message) => {
        seen.push(message);
        return ConsumeResult.SUCCESS;
      },
    });
    await consumer.start();
    const handles = await receiptHandlesSent(fake, 'ack', 10);
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
    const fake = await brokers.start();
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
    pushNumberedMessages(fake, 4);
    const items = await nackItemsSent(fake, 3);
    expect(items).toEqual([
      { receiptHandle: 'lease-1', reason: 'the listener returned FAILURE' },
      { receiptHandle: 'lease-2', reason: 'payment service answered 503' },
      {
        receiptHandle: 'lease-3',
        reason: 'the listener asked for a retry after 5000 ms',
        retryAfterMs: 5_000,
      },
    ]);
    expect(await receiptHandlesSent(fake, 'ack', 1)).toEqual(['lease-4']);
    expect(onListenerError).toHaveBeenCalledExactlyOnceWith(
      new Error('payment service answered 503'),
      expect.objectContaining({ messageId: 'm1' }),
    );
  });

  it("fails a listener still running after consumptionTimeoutMs with 'consumption timeout'", async () => {
    const fake = await brokers.start();
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
    pushNumberedMessages(fake, 1);
    expect(await nackItemsSent(fake, 1)).toEqual([
      { receiptHandle: 'lease-1', reason: 'consumption timeout' },
    ]);
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
    const fake = await brokers.start();
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
    pushNumberedMessages(fake, 1);
    await fake.waitForFrames('ack');
    pushNumberedMessages(fake, 1);
    // The refused handle still leaves the cache: its credit comes back, and the next message flows.
    await fake.waitForFrames('ack', 2);
    expect(onError).toHaveBeenCalledExactlyOnceWith(
      expect.objectContaining({ name: 'BrokerError', code: 410, details: { messageId: 'm0' } }),
    );
    expect(await creditsGranted(fake, 2)).toBe(2);
  });
});

describe('flow control', () => {
  it('never runs more than `concurrency` listeners at once', async () => {
    const fake = await brokers.start();
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
    pushNumberedMessages(fake, 30);
    expect(await receiptHandlesSent(fake, 'ack', 30)).toHaveLength(30);
    expect(maxRunning).toBe(3);
  });

  it('holds at most maxCachedMessages unsettled, granting credit as results are sent', async () => {
    const fake = await brokers.start();
    const consumer = createConsumer(fake.endpoint, {
      maxCachedMessages: 5,
      concurrency: 2,
      listener: async () => ConsumeResult.SUCCESS,
    });
    await consumer.start();
    pushNumberedMessages(fake, 23);
    expect(await receiptHandlesSent(fake, 'ack', 23)).toHaveLength(23);
    // The window starts at 4 (twice `concurrency`) and grows to 5 once the listeners wait for
    // credit: a credit back for each of the 23 results, and the one more of the growth.
    expect(fake.framesOf('subscribe')[0]?.maxCachedMessages).toBe(4);
    expect(await creditsGranted(fake, 24)).toBe(24);
    const [subscription] = fake.subscriptions;
    expect(subscription?.maxUnsettled).toBe(5);
    expect(subscription?.credits).toBe(5);
    expect(
      fake.framesOf('credit').every((frame) => frame.subscriptionId === subscription?.subscriptionId),
    ).toBe(true);
  });

  it('processes the messages of one message group one at a time, in order (P5)', async () => {
    const fake = await brokers.start();
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
    pushNumberedMessages(fake, 12, (index) => ({ messageGroup: `g${index % 3}` }));
    await receiptHandlesSent(fake, 'ack', 12);
    expect(overlap).toBe(false);
    for (const group of ['g0', 'g1', 'g2']) {
      const ids = order.filter((id) => Number(id.slice(1)) % 3 === Number(group.slice(1)));
      expect(ids).toEqual([...ids].sort((a, b) => Number(a.slice(1)) - Number(b.slice(1))));
    }
  });

  it('releases deliveries for a subscription it does not know, and stops that subscription', async () => {
    const fake = await brokers.start();
    const listener = vi.fn(() => ConsumeResult.SUCCESS);
    const consumer = createConsumer(fake.endpoint, { listener });
    await consumer.start();
    const stray = fake.lease(FakeBroker.deliveredMessage({ messageId: 'stray' }));
    fake.sessions[0]?.send({ type: 'deliver', subscriptionId: 99, messages: [stray] });
    expect(await receiptHandlesSent(fake, 'release', 1)).toEqual([stray.receiptHandle]);
    const [unsubscribe] = await fake.waitForFrames('unsubscribe');
    expect(unsubscribe).toMatchObject({ subscriptionId: 99 });
    expect(listener).not.toHaveBeenCalled();
  });
});
