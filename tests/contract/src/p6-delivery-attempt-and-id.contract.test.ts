import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('stream'))(
  'P6: every delivery carries deliveryAttempt (1 on the first) and the unchanged messageId (over %s)',
  (transport) => {
    it('counts 1, 2, 3 across retries and keeps the id, body and properties', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', {
        startFrom: 'earliest',
        retryPolicy: { type: 'fixed', delayMs: 10 },
      });
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'billing', subscriptions: { orders: '*' } },
        (message) => (message.deliveryAttempt < 3 ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS),
      );
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId, offset } = await producer.send({
        topic: 'orders',
        body: 'x',
        properties: { k: 'v' },
      });
      const deliveries = await consumer.delivered(3);
      expect(deliveries.map((d) => d.message.deliveryAttempt)).toEqual([1, 2, 3]);
      for (const { message } of deliveries) {
        expect(message).toMatchObject({ messageId, offset, topic: 'orders', properties: { k: 'v' } });
      }
    });
  },
);
