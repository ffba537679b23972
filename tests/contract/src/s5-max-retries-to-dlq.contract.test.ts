import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('request'))(
  'S5: the delivery that would exceed maxRetries + 1 moves the message to the DLQ instead (over %s)',
  (transport) => {
    it('delivers at most maxRetries + 1 times, then the message is in %DLQ%<group>', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', { startFrom: 'earliest', maxRetries: 2 });
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({ topic: 'orders', body: 'poison' });
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 2_000,
      });
      const attempts: number[] = [];
      for (let i = 0; i < 3; i++) {
        const [message] = await consumer.receive(1, 30);
        if (message) attempts.push(message.deliveryAttempt);
      }
      expect(attempts).toEqual([1, 2, 3]);
      // A DLQ consumer sees it as soon as the third lease ends: waiting for it is waiting for the move.
      await broker.admin.putGroup('ops', { startFrom: 'earliest' });
      await using dlqReader = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'ops',
        subscriptions: { '%DLQ%billing': '*' },
        awaitDurationMs: 10_000,
      });
      const [dead] = await dlqReader.receive(1, 30_000);
      expect(dead).toMatchObject({ messageId, topic: '%DLQ%billing' });
      expect(text(dead?.body ?? new Uint8Array())).toBe('poison');
      // …and never a fourth delivery of the original.
      await using short = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 200,
      });
      expect(await short.receive(1, 30)).toEqual([]);
      expect((await broker.admin.getGroup('billing')).stats).toMatchObject({ dlq: 1, inflight: 0, ready: 0 });
    });
  },
);
