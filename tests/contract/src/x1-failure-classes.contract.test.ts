import { ConsumeResult, NonRetryableError } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('stream'))(
  'X1: a non-retryable failure sends the message to the DLQ at once, with the error’s message (over %s)',
  (transport) => {
    it('dead-letters on a NonRetryableError or an error the nonRetryable option accepts; retries any other', async () => {
      await using broker = await startBroker();
      // 16 retries left, and a retry delay short enough to see the retried message come back.
      await broker.admin.putGroup('billing', {
        startFrom: 'earliest',
        retryPolicy: { type: 'fixed', delayMs: 50 },
      });
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        {
          group: 'billing',
          subscriptions: { orders: '*' },
          nonRetryable: (error) => error instanceof SyntaxError,
        },
        (message) => {
          if (message.tag === 'gone') throw new NonRetryableError('order 1042 no longer exists');
          if (message.tag === 'garbled') JSON.parse(message.text());
          if (message.tag === 'flaky' && message.deliveryAttempt === 1) throw new Error('gateway busy');
          return ConsumeResult.SUCCESS;
        },
      );
      await using producer = await startProducer(broker.endpointFor(transport));
      const gone = await producer.send({ topic: 'orders', body: '{}', tag: 'gone' });
      const garbled = await producer.send({ topic: 'orders', body: '{not json', tag: 'garbled' });
      const flaky = await producer.send({ topic: 'orders', body: '{}', tag: 'flaky' });

      const stats = await eventually(
        () => broker.admin.getGroup('billing').then((group) => group.stats),
        (s) => s.dlq === 2 && s.committed === 1,
      );
      expect(stats).toMatchObject({ dlq: 2, committed: 1, waitingRetry: 0, inflight: 0, ready: 0 });
      const listed = await broker.admin.listDlq('billing');
      const byId = new Map(listed.messages.map((entry) => [entry.messageId, entry]));
      expect(byId.get(gone.messageId)).toMatchObject({
        attempts: 1,
        reason: 'order 1042 no longer exists',
        cause: 'nonRetryable',
      });
      expect(byId.get(garbled.messageId)).toMatchObject({ attempts: 1, cause: 'nonRetryable' });
      // The reason is the SyntaxError's own message, whatever the engine words it as.
      expect(byId.get(garbled.messageId)?.reason).toMatch(/JSON/);
      expect(byId.has(flaky.messageId)).toBe(false);
      const goneHistory = (await broker.admin.getMessage(gone.messageId)).groups[0]?.history ?? [];
      expect(goneHistory.map(({ result, reason }) => ({ result, reason }))).toEqual([
        { result: 'deadLettered', reason: 'order 1042 no longer exists' },
      ]);
      // Each non-retryable message was delivered once; the ordinary failure came back for a second try.
      const attempts = (tag: string) =>
        consumer.deliveries
          .filter(({ message }) => message.tag === tag)
          .map(({ message }) => message.deliveryAttempt);
      expect(attempts('gone')).toEqual([1]);
      expect(attempts('garbled')).toEqual([1]);
      expect(attempts('flaky')).toEqual([1, 2]);
    });
  },
);
