import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, text } from './support/clients.js';
import { startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('stream'))(
  'P5: FIFO groups hold a message group back while one of its messages is Inflight or WaitingRetry (over %s)',
  (transport) => {
    it('redelivers a failed head before the rest of its message group, while other message groups flow', async () => {
      await using broker = await startBroker();
      await broker.admin.putTopic('ledger', { type: 'fifo' });
      await broker.admin.putGroup('books', {
        startFrom: 'earliest',
        fifo: true,
        retryPolicy: { type: 'fixed', delayMs: 300 },
      });
      await using producer = await startProducer(broker.endpointFor(transport));
      for (const [group, body] of [
        ['acct-A', 'A1'],
        ['acct-A', 'A2'],
        ['acct-B', 'B1'],
        ['acct-A', 'A3'],
        ['acct-B', 'B2'],
      ] as const) {
        await producer.send({ topic: 'ledger', body, messageGroup: group });
      }
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'books', subscriptions: { ledger: '*' }, concurrency: 10 },
        (message) =>
          text(message.body) === 'A1' && message.deliveryAttempt === 1
            ? ConsumeResult.FAILURE
            : ConsumeResult.SUCCESS,
      );
      const deliveries = await consumer.delivered(6);
      const order = deliveries.map((d) => `${text(d.message.body)}#${d.message.deliveryAttempt}`);
      // acct-A waits for its failed head; acct-B does not.
      expect(order.filter((entry) => entry.startsWith('A'))).toEqual(['A1#1', 'A1#2', 'A2#1', 'A3#1']);
      expect(order.filter((entry) => entry.startsWith('B'))).toEqual(['B1#1', 'B2#1']);
      expect(order.indexOf('B2#1')).toBeLessThan(order.indexOf('A1#2'));
      // The retry of the head waited the FIFO policy's fixed delay.
      const first = deliveries.find((d) => text(d.message.body) === 'A1' && d.message.deliveryAttempt === 1);
      const retry = deliveries.find((d) => text(d.message.body) === 'A1' && d.message.deliveryAttempt === 2);
      expect((retry?.atMs ?? 0) - (first?.atMs ?? 0)).toBeGreaterThanOrEqual(300);
    });

    it('moves the head to the DLQ after maxRetries and lets its message group move on', async () => {
      await using broker = await startBroker();
      await broker.admin.putTopic('ledger', { type: 'fifo' });
      await broker.admin.putGroup('books', {
        startFrom: 'earliest',
        fifo: true,
        maxRetries: 1,
        retryPolicy: { type: 'fixed', delayMs: 20 },
      });
      await using producer = await startProducer(broker.endpointFor(transport));
      await producer.send({ topic: 'ledger', body: 'A1', messageGroup: 'acct-A' });
      await producer.send({ topic: 'ledger', body: 'A2', messageGroup: 'acct-A' });
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'books', subscriptions: { ledger: '*' } },
        (message) => (text(message.body) === 'A1' ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS),
      );
      const deliveries = await consumer.delivered(3);
      expect(deliveries.map((d) => `${text(d.message.body)}#${d.message.deliveryAttempt}`)).toEqual([
        'A1#1',
        'A1#2',
        'A2#1',
      ]);
    });
  },
);
