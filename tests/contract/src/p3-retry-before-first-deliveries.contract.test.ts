import { ConsumeResult, type ConsumeResultValue } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, text } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';

describe('P3: a retry that fell due is delivered before messages that were never delivered', () => {
  // Delay messages whose time came wait Ready at the broker, like a retry that fell due: when
  // a burst of them is waiting, the retry still goes first (the ready queue's `again` line).
  it('delivers a due retry ahead of a backlog of delay messages that fell due before it', async () => {
    const delayedCount = 8;
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: 100 },
    });
    await using producer = await startProducer(broker.endpoint);
    // Sent first, so the consumer's first take parks them until their time; then the plain one.
    // Their time is well after that take (1.5 s: a consumer connecting on a loaded machine can
    // take hundreds of ms), and the same for all: they fall due together.
    const deliverAt = Date.now() + 1_500;
    for (let index = 0; index < delayedCount; index++)
      await producer.send({ topic: 'orders', body: `d${index}`, deliverAt });
    const failing = await producer.send({ topic: 'orders', body: 'm0' });

    const started: string[] = [];
    const holds = new Map<string, () => void>();
    let delayedHeld = false;
    const hold = (body: string, result: ConsumeResultValue) =>
      new Promise<ConsumeResultValue>((resolve) => holds.set(body, () => resolve(result)));
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      // One message out at a time: the broker chooses every next delivery as credit comes back.
      { group: 'billing', subscriptions: { orders: '*' }, concurrency: 1, maxCachedMessages: 1 },
      (message) => {
        const body = text(message.body);
        started.push(`${body}@${message.deliveryAttempt}`);
        // m0 fails once the delays are Ready; the first delay message waits for m0's retry.
        if (body === 'm0' && message.deliveryAttempt === 1) return hold(body, ConsumeResult.FAILURE);
        if (body.startsWith('d') && !delayedHeld) {
          delayedHeld = true;
          return hold(body, ConsumeResult.SUCCESS);
        }
        return ConsumeResult.SUCCESS;
      },
    );
    await consumer.delivered(1);
    expect(started).toEqual(['m0@1']);
    // Every delay message fell due and waits Ready: the consumer's one credit is m0's.
    await eventually(
      () => broker.admin.getGroup('billing'),
      (group) => group.stats.ready === delayedCount,
      10_000,
    );

    // m0 fails: its credit brings a delay message (m0's retry is 100 ms away), which holds it.
    holds.get('m0')?.();
    await consumer.delivered(2);
    const firstDelayed = started[1] ?? '';
    expect(firstDelayed).toMatch(/^d\d@1$/);
    await eventually(
      () => broker.admin.getMessage(failing.messageId),
      ({ groups: [view] }) => view?.state === 'ready',
    );

    // The retry fell due behind seven delay messages Ready since before it: it goes next.
    holds.get(firstDelayed.slice(0, -2))?.();
    await consumer.delivered(2 + delayedCount);
    expect(started[2]).toBe('m0@2');
    expect(started.filter((delivery) => delivery.startsWith('d'))).toHaveLength(delayedCount);
  });
});
