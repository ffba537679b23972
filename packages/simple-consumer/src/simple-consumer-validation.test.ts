import { ReceivedMessage } from '@ricochet/client';
import { FakeBroker, readyNumberedMessages, rejectionOf } from '@ricochet/client-testkit';
import { describe, expect, it } from 'vitest';
import { simpleConsumersPerTest } from './simple-consumer.fixture.js';
import { SimpleConsumer } from './simple-consumer.js';
import type { SimpleConsumerOptions } from './simple-consumer-options.js';

const TWELVE_HOURS_MS = 12 * 60 * 60 * 1_000;

const { brokers, createConsumer } = simpleConsumersPerTest();

describe('local validation', () => {
  it.each([
    [0, 1_000],
    [33, 1_000],
    [1.5, 1_000],
    [1, 9],
    [1, TWELVE_HOURS_MS + 1],
    [1, Number.NaN],
  ])('refuses receive(%s, %s) with 400 before any I/O', async (maxMessages, invisibleDurationMs) => {
    const fake = await brokers.start();
    const consumer = createConsumer(fake.endpoint);
    const error = await rejectionOf(consumer.receive(maxMessages, invisibleDurationMs));
    expect(error).toMatchObject({ name: 'ClientError', code: 400, retryable: false });
    expect(fake.connectionCount).toBe(0);
  });

  it('accepts the bounds of receive and changeInvisibleDuration', async () => {
    const fake = await brokers.start();
    readyNumberedMessages(fake, 1);
    const consumer = createConsumer(fake.endpoint);
    const [message] = await consumer.receive(32, 10);
    if (message === undefined) throw new Error('no message');
    await consumer.receive(1, TWELVE_HOURS_MS);
    await consumer.changeInvisibleDuration(message, TWELVE_HOURS_MS);
    await consumer.changeInvisibleDuration(message, 0);
  });

  it.each([-1, TWELVE_HOURS_MS + 1, 0.5])(
    'refuses changeInvisibleDuration(%s) with 400',
    async (durationMs) => {
      const fake = await brokers.start();
      const consumer = createConsumer(fake.endpoint);
      const message = new ReceivedMessage(FakeBroker.deliveredMessage());
      expect(await rejectionOf(consumer.changeInvisibleDuration(message, durationMs))).toMatchObject({
        code: 400,
      });
      expect(fake.connectionCount).toBe(0);
    },
  );

  it('refuses to ack something that is not a received message', async () => {
    const fake = await brokers.start();
    const consumer = createConsumer(fake.endpoint);
    const forged = { messageId: 'x' } as unknown as ReceivedMessage;
    expect(await rejectionOf(consumer.ack(forged))).toMatchObject({ code: 400 });
    expect(fake.connectionCount).toBe(0);
  });

  it.each<[string, Partial<SimpleConsumerOptions>]>([
    ['a bad group', { group: 'no spaces' }],
    ['no subscriptions', { subscriptions: {} }],
    ['a bad topic', { subscriptions: { 'or ders': '*' } }],
    ['a bad tag expression', { subscriptions: { orders: 'a || *' } }],
    ['a long awaitDurationMs', { awaitDurationMs: 30_001 }],
    ['a negative unavailableRetryMs', { unavailableRetryMs: -1 }],
    ['an unavailableRetryMs that is no number', { unavailableRetryMs: Number.NaN }],
    ['a bad endpoint', { endpoint: 'ftp://127.0.0.1:1' }],
    ['an empty list of endpoints', { endpoint: [] }],
    ['a bad endpoint in a list', { endpoint: ['http://127.0.0.1:1', 'ftp://127.0.0.1:2'] }],
  ])('refuses %s at construction with 400', (_, options) => {
    expect(
      () =>
        new SimpleConsumer({
          endpoint: 'ws://127.0.0.1:1',
          group: 'billing',
          subscriptions: { orders: '*' },
          ...options,
        }),
    ).toThrow(expect.objectContaining({ name: 'ClientError', code: 400 }));
  });
});
