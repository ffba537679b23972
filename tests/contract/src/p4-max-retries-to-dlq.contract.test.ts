import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('stream'))(
  'P4: maxRetries N ⇒ at most N+1 deliveries; the failure of delivery N+1 moves the message to the DLQ at once (over %s)',
  (transport) => {
    it('delivers exactly three times with maxRetries 2, then the message is in %DLQ%<group>', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', {
        startFrom: 'earliest',
        maxRetries: 2,
        retryPolicy: { type: 'fixed', delayMs: 20 },
      });
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'billing', subscriptions: { orders: '*' } },
        () => ConsumeResult.FAILURE,
      );
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({ topic: 'orders', body: 'poison' });
      await consumer.delivered(3);

      // At once: the DLQ holds it as soon as the third failure is settled, with nothing scheduled.
      const stats = await eventually(
        () => broker.admin.getGroup('billing').then((group) => group.stats),
        (s) => s.dlq === 1,
      );
      expect(stats).toMatchObject({ dlq: 1, waitingRetry: 0, inflight: 0, ready: 0 });
      const view = await broker.admin.getMessage(messageId);
      expect(view.groups[0]?.state).toBe('dlq');
      expect(view.groups[0]?.history.map((entry) => entry.result)).toEqual([
        'failed',
        'failed',
        'deadLettered',
      ]);
      expect(consumer.deliveries.map((d) => d.message.deliveryAttempt)).toEqual([1, 2, 3]);

      await broker.admin.putGroup('ops', { startFrom: 'earliest' });
      await using dlqReader = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'ops',
        subscriptions: { '%DLQ%billing': '*' },
      });
      const [dead] = await dlqReader.receive(1, 30_000);
      expect(dead).toMatchObject({
        messageId,
        deadLetter: { originTopic: 'orders', attempts: 3, reason: 'the listener returned FAILURE' },
      });
    });
  },
);
