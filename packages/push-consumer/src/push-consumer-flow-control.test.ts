import { creditsGranted, pushNumberedMessages, receiptHandlesSent } from '@ricochet/client-testkit';
import { describe, expect, it, vi } from 'vitest';
import { ConsumeResult, type ConsumeResultValue } from './consume-result.js';
import { pushConsumersPerTest } from './push-consumer.fixture.js';

const { brokers, createConsumer } = pushConsumersPerTest();

describe('the credit window', () => {
  it('starts at twice concurrency and grows to maxCachedMessages while listeners wait for the broker', async () => {
    const fake = await brokers.start();
    const consumer = createConsumer(fake.endpoint, {
      maxCachedMessages: 64,
      concurrency: 2,
      listener: async () => ConsumeResult.SUCCESS,
    });
    await consumer.start();
    pushNumberedMessages(fake, 300);
    expect(await receiptHandlesSent(fake, 'ack', 300)).toHaveLength(300);
    expect(fake.framesOf('subscribe')[0]?.maxCachedMessages).toBe(4);
    // A credit for each result, and 60 more as the window grew from 4 to 64, never past it.
    expect(await creditsGranted(fake, 360)).toBe(360);
    const [subscription] = fake.subscriptions;
    expect(subscription?.credits).toBe(64);
    expect(subscription?.maxUnsettled).toBe(64);
  });

  it('stays short while the listeners are the bottleneck: the next message always waits in the cache', async () => {
    const fake = await brokers.start();
    // After the deliveries a credit brings, a marker (an error frame without id): once the consumer
    // reports marker k, it holds every message the first k credits brought.
    let markers = 0;
    fake.on('credit', (frame, session) => {
      const subscription = fake.subscriptions.find((open) => open.subscriptionId === frame.subscriptionId);
      if (subscription !== undefined) subscription.credits += frame.credits;
      fake.push();
      session.send({ type: 'error', code: 500, message: 'marker' });
    });
    const pending: ((result: ConsumeResultValue) => void)[] = [];
    const consumer = createConsumer(fake.endpoint, {
      maxCachedMessages: 64,
      concurrency: 1,
      onError: () => {
        markers += 1;
      },
      listener: () => new Promise<ConsumeResultValue>((resolve) => pending.push(resolve)),
    });
    await consumer.start();
    pushNumberedMessages(fake, 21);
    // A slow listener: message k ends only once message k + 1 is in the cache, brought by the
    // credit of message k − 1's result (the initial credit brought m0 and m1).
    for (let index = 0; index < 20; index++) {
      await vi.waitFor(
        () => {
          expect(pending).toHaveLength(index + 1);
          expect(markers).toBeGreaterThanOrEqual(index);
        },
        { interval: 1 },
      );
      pending[index]?.(ConsumeResult.SUCCESS);
    }
    expect(await receiptHandlesSent(fake, 'ack', 20)).toHaveLength(20);
    // The window of one listener (2) never grew: one credit back per result, no more.
    expect(fake.framesOf('subscribe')[0]?.maxCachedMessages).toBe(2);
    expect(await creditsGranted(fake, 20)).toBe(20);
    expect(fake.subscriptions[0]?.maxUnsettled).toBe(2);
    await vi.waitFor(() => expect(pending).toHaveLength(21));
    pending[20]?.(ConsumeResult.SUCCESS);
  });
});
