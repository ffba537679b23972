import { gate, nextStatus, pushNumberedMessages, receiptHandlesSent } from '@ricochet/client-testkit';
import { describe, expect, it, vi } from 'vitest';
import { ConsumeResult, type ConsumeResultValue } from './consume-result.js';
import { pushConsumersPerTest } from './push-consumer.fixture.js';

const { brokers, createConsumer } = pushConsumersPerTest();

describe('reconnect (C1, C2)', () => {
  it('subscribes again, drops the stale cache and sends no result for the old session', async () => {
    const fake = await brokers.start();
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
    pushNumberedMessages(fake, 3);
    await firstStarted.promise;
    const disconnected = nextStatus(consumer, 'disconnected');
    fake.dropAll();
    await disconnected;
    // The new session's subscription gets the released messages again, with new handles (the old
    // one held lease-1 and lease-2, its credit window of one listener).
    await fake.waitForFrames('subscribe', 2);
    first.open(ConsumeResult.SUCCESS);
    const handles = await receiptHandlesSent(fake, 'ack', 3);
    expect(handles).toEqual(['lease-3', 'lease-4', 'lease-5']);
    // m1 and m2 of the old session were never started; m0's old result was never sent.
    expect(calls).toEqual(['m0@1', 'm0@1', 'm1@1', 'm2@1']);
    const [, subscription] = fake.subscriptions;
    expect(subscription?.session).toBe(fake.sessions[1]);
    expect(
      fake.framesOf('credit').every((frame) => frame.subscriptionId === subscription?.subscriptionId),
    ).toBe(true);
  });

  it('retries a retryable refusal of the new subscribe, reporting it', async () => {
    const fake = await brokers.start();
    const onError = vi.fn();
    const consumer = createConsumer(fake.endpoint, { onError, listener: () => ConsumeResult.SUCCESS });
    await consumer.start();
    fake.on('subscribe', (frame, session) => {
      fake.on('subscribe', undefined);
      session.send({ type: 'error', id: frame.id, code: 503, message: 'warming up' });
    });
    fake.dropAll();
    await fake.waitForFrames('subscribe', 3);
    pushNumberedMessages(fake, 1);
    expect(await receiptHandlesSent(fake, 'ack', 1)).toEqual(['lease-1']);
    expect(onError).toHaveBeenCalledExactlyOnceWith(expect.objectContaining({ code: 503, retryable: true }));
  });
});
