import type { ReceivedMessage } from '@ricochet/client';
import type { Producer } from '@ricochet/producer';
import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';

/**
 * Messages near the body limit (4 MiB by default) are delivered in frames the client reads. A turn
 * of push deliveries or a receive's answer of 32 such messages is over 100 MiB, past what the `ws`
 * package reads by default: the client dropped the connection, its deliveries were released and
 * pushed again into the same oversize frame, and no message ever arrived, with no error shown.
 */

const MESSAGES = 40;
const BODY_BYTES = 4_000_000;

/** Send `count` bodies of {@link BODY_BYTES}, each starting with its index, a few at a time. */
async function sendLarge(producer: Producer, topic: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += 8) {
    const batch = Array.from({ length: Math.min(8, count - start) }, (_, offset) => {
      const body = new Uint8Array(BODY_BYTES);
      body[0] = start + offset;
      return producer.send({ topic, body });
    });
    for (const receipt of await Promise.all(batch)) ids.push(receipt.messageId);
  }
  return ids;
}

/** Rejects after `ms`, so a test that would wait for ever fails with what it saw. */
function within<T>(promise: Promise<T>, ms: number, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms} ms: ${what()}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe('Frame limits: deliveries of large messages stay below what the client reads', () => {
  it('pushes 40 messages of 4 MB to one consumer, each once per attempt, on its first session', {
    timeout: 90_000,
  }, async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('archive', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: 20 },
    });
    await using producer = await startProducer(broker.endpoint);
    const sent = await sendLarge(producer, 'scans', MESSAGES);
    // Every other message fails its first delivery: a retry of a large message, too, comes once.
    const failsFirst = new Set(sent.filter((_, index) => index % 2 === 0));

    const protocolErrors: Error[] = [];
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      {
        group: 'archive',
        subscriptions: { scans: '*' },
        onProtocolError: (error) => protocolErrors.push(error),
      },
      (message) =>
        failsFirst.has(message.messageId) && message.deliveryAttempt === 1
          ? ConsumeResult.FAILURE
          : ConsumeResult.SUCCESS,
    );
    const expected = MESSAGES + failsFirst.size;
    const deliveries = await within(
      consumer.delivered(expected),
      30_000,
      () =>
        `${consumer.deliveries.length} of ${expected} delivered; ${protocolErrors.map(String).join('; ')}`,
    );
    expect(protocolErrors).toEqual([]);
    const attemptsOf = new Map<string, number[]>();
    for (const { message } of deliveries) {
      expect(message.body.byteLength).toBe(BODY_BYTES);
      attemptsOf.set(message.messageId, [
        ...(attemptsOf.get(message.messageId) ?? []),
        message.deliveryAttempt,
      ]);
    }
    expect([...attemptsOf.keys()].sort()).toEqual([...sent].sort());
    for (const [messageId, attempts] of attemptsOf) {
      expect(attempts).toEqual(failsFirst.has(messageId) ? [1, 2] : [1]);
    }
    // Every success was acknowledged: nothing is left to deliver again.
    await expect
      .poll(async () => (await broker.admin.getGroup('archive')).stats.committed, { timeout: 10_000 })
      .toBe(MESSAGES);
    expect(consumer.deliveries).toHaveLength(expected);
  });

  it('holds a push consumer’s unsettled deliveries within its maxCachedBytes', {
    timeout: 60_000,
  }, async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('archive', { startFrom: 'earliest' });
    await using producer = await startProducer(broker.endpoint);
    const sent = await sendLarge(producer, 'scans', 10);

    // Eight listeners that hold what they get: only the byte limit keeps the broker from sending
    // more (its credit window starts at 16 messages), three of 4 MB within 13 MB.
    let releaseHeld: () => void = () => {};
    const held = new Promise<void>((resolve) => (releaseHeld = resolve));
    await using holding = await startRecordingConsumer(
      broker.endpoint,
      { group: 'archive', subscriptions: { scans: '*' }, concurrency: 8, maxCachedBytes: 13_000_000 },
      async () => {
        await held;
        return ConsumeResult.SUCCESS;
      },
    );
    await holding.delivered(3);
    // What the holding consumer cannot take goes to another instance of the group.
    await using other = await startRecordingConsumer(
      broker.endpoint,
      { group: 'archive', subscriptions: { scans: '*' } },
      () => ConsumeResult.SUCCESS,
    );
    await within(other.delivered(sent.length - 3), 30_000, () => `the other has ${other.deliveries.length}`);
    expect(holding.deliveries).toHaveLength(3);
    releaseHeld();
    const all = [...holding.deliveries, ...other.deliveries].map((d) => d.message.messageId);
    expect(all.sort()).toEqual([...sent].sort());
  });

  it('answers a receive of 32 with what fits one frame, and every message is received once', {
    timeout: 60_000,
  }, async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('archive', { startFrom: 'earliest' });
    await using producer = await startProducer(broker.endpoint);
    const sent = await sendLarge(producer, 'scans', 12);

    const protocolErrors: Error[] = [];
    await using consumer = await startSimpleConsumer(broker.endpoint, {
      group: 'archive',
      subscriptions: { scans: '*' },
      awaitDurationMs: 0,
      onProtocolError: (error) => protocolErrors.push(error),
    });
    const received: ReceivedMessage[] = [];
    const answerSizes: number[] = [];
    for (let round = 0; round < sent.length && received.length < sent.length; round++) {
      const messages = await consumer.receive(32, 60_000);
      answerSizes.push(messages.length);
      await Promise.all(messages.map((message) => consumer.ack(message)));
      received.push(...messages);
    }
    expect(protocolErrors).toEqual([]);
    expect(received.map((message) => message.messageId).sort()).toEqual([...sent].sort());
    // 16 MiB of messages at most per frame: four of 4 MB.
    expect(Math.max(...answerSizes)).toBe(4);
  });
});
