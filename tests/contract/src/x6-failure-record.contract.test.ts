import type { ReceivedMessage } from '@ricochet/client';
import { ConsumeResult, NonRetryableError } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { startRecordingConsumer, untilDeadLettered } from './support/push.js';
import { startRocketBroker, startRocketSimpleConsumer } from './support/rocketmq.js';
import { startBroker, type TestBroker } from './support/test-broker.js';

/** Four messages, each dead-lettered for its own cause; resolves with their ids by tag. */
async function deadLetterOnePerCause(broker: TestBroker, endpoint: string): Promise<Map<string, string>> {
  // maxRetries 1: a second failure spends the attempts. The broker's consumption timeout is 300 ms.
  await broker.admin.putGroup('billing', {
    startFrom: 'earliest',
    maxRetries: 1,
    retryPolicy: { type: 'fixed', delayMs: 50 },
    consumptionTimeoutMs: 300,
  });
  const consumer = await startRecordingConsumer(
    endpoint,
    { group: 'billing', subscriptions: { orders: '*' } },
    async (message, index) => {
      switch (message.tag) {
        case 'failing':
          return ConsumeResult.FAILURE;
        case 'hanging':
          // Never answers in time: the broker's timeout fails both deliveries (P2).
          await new Promise((resolve) => setTimeout(resolve, 1_000 + index));
          return ConsumeResult.SUCCESS;
        case 'poison':
          return ConsumeResult.deadLetter('schema v0 is no longer supported');
        default:
          throw new NonRetryableError('order 1042 no longer exists');
      }
    },
  );
  const producer = await startProducer(endpoint);
  const ids = new Map<string, string>();
  for (const tag of ['failing', 'hanging', 'poison', 'gone'])
    ids.set(tag, (await producer.send({ topic: 'orders', body: tag, tag })).messageId);
  await untilDeadLettered(broker.admin, 'billing', 4, 15_000);
  await producer.close();
  await consumer.close();
  return ids;
}

describe('X6: every DLQ entry carries its failure record: cause and first failure, beside attempts and reason', () => {
  it('lists each cause in GET /v1/groups/:group/dlq and hands it to a Ricochet consumer of %DLQ%<group>', async () => {
    await using broker = await startBroker();
    const startedAt = Date.now();
    const ids = await deadLetterOnePerCause(broker, broker.endpoint);
    const listed = new Map(
      (await broker.admin.listDlq('billing')).messages.map((entry) => [entry.messageId, entry]),
    );
    const expected = {
      failing: { cause: 'maxRetries', attempts: 2, reason: 'the listener returned FAILURE' },
      hanging: { cause: 'consumptionTimeout', attempts: 2, reason: 'consumption timeout' },
      poison: { cause: 'deadLetterNow', attempts: 1, reason: 'schema v0 is no longer supported' },
      gone: { cause: 'nonRetryable', attempts: 1, reason: 'order 1042 no longer exists' },
    } as const;
    for (const [tag, record] of Object.entries(expected)) {
      const entry = listed.get(ids.get(tag) ?? '');
      expect(entry, tag).toMatchObject(record);
      // The first failure: after the test began, no later than the move to the DLQ.
      expect(entry?.firstFailedAt, tag).toBeGreaterThanOrEqual(startedAt);
      expect(entry?.firstFailedAt, tag).toBeLessThanOrEqual(entry?.deadLetteredAt ?? 0);
    }
    // The message view says it too, on the delivery that moved each message to the DLQ.
    for (const [tag, record] of Object.entries(expected)) {
      const view = await broker.admin.getMessage(ids.get(tag) ?? '');
      const billing = view.groups.find((group) => group.group === 'billing');
      expect(billing?.state, tag).toBe('dlq');
      expect(billing?.history.at(-1), tag).toMatchObject({ result: 'deadLettered', cause: record.cause });
    }
    // Two failures 50 ms apart at least: the first failure is not the last one.
    const failing = listed.get(ids.get('failing') ?? '');
    expect((failing?.deadLetteredAt ?? 0) - (failing?.firstFailedAt ?? 0)).toBeGreaterThanOrEqual(50);

    await broker.admin.putGroup('dlq-reader', { startFrom: 'earliest' });
    const seen: ReceivedMessage[] = [];
    await using reader = await startRecordingConsumer(
      broker.endpoint,
      { group: 'dlq-reader', subscriptions: { '%DLQ%billing': '*' } },
      (message) => {
        seen.push(message);
        return ConsumeResult.SUCCESS;
      },
    );
    await reader.delivered(4);
    for (const message of seen) {
      const entry = listed.get(message.messageId);
      expect(message.deadLetter).toEqual({
        originTopic: 'orders',
        attempts: entry?.attempts,
        reason: entry?.reason,
        deadLetteredAt: entry?.deadLetteredAt,
        cause: entry?.cause,
        firstFailedAt: entry?.firstFailedAt,
      });
    }
  });

  it('hands the record to a RocketMQ client as message properties, under RocketMQ’s names where it has them', async () => {
    await using rocket = await startRocketBroker();
    const ids = await deadLetterOnePerCause(rocket.broker, rocket.broker.endpoint);
    const listed = new Map(
      (await rocket.broker.admin.listDlq('billing')).messages.map((entry) => [entry.messageId, entry]),
    );
    await rocket.broker.admin.putGroup('dlq-reader', { startFrom: 'earliest' });
    await using consumer = await startRocketSimpleConsumer(rocket.endpoints, 'dlq-reader', {
      '%DLQ%billing': '*',
    });
    const received = [];
    for (let polls = 0; polls < 20 && received.length < 4; polls++)
      received.push(...(await consumer.receive(4, 30_000)));
    expect(received.map((message) => message.messageId).sort()).toEqual([...ids.values()].sort());
    for (const message of received) {
      const entry = listed.get(message.messageId);
      expect(Object.fromEntries(message.properties)).toMatchObject({
        DLQ_ORIGIN_TOPIC: 'orders',
        DLQ_ORIGIN_MESSAGE_ID: message.messageId,
        RECONSUME_TIME: String(entry?.attempts),
        RICOCHET_DLQ_CAUSE: entry?.cause,
        RICOCHET_DLQ_REASON: entry?.reason,
        RICOCHET_DLQ_DEAD_LETTERED_AT: String(entry?.deadLetteredAt),
        RICOCHET_DLQ_FIRST_FAILED_AT: String(entry?.firstFailedAt),
      });
    }
  });
});
