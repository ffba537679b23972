import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('stream'))(
  'startFrom "latest": a new group\'s position is taken when its consumer starts (over %s)',
  (transport) => {
    it('receives with a simple consumer a message sent after start() resolved, on a new group and topic', async () => {
      await using broker = await startBroker();
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 0,
      });
      await using producer = await startProducer(broker.endpointFor(transport));
      await producer.send({ topic: 'orders', body: 'sent after start' });
      const messages = await consumer.receive(10, 30_000);
      expect(messages.map((message) => text(message.body))).toEqual(['sent after start']);
    });

    it('does not receive what the topic held before the group started', async () => {
      await using broker = await startBroker();
      await using producer = await startProducer(broker.endpointFor(transport));
      await producer.send({ topic: 'orders', body: 'before start' });
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 0,
      });
      await producer.send({ topic: 'orders', body: 'after start' });
      const messages = await consumer.receive(10, 30_000);
      expect(messages.map((message) => text(message.body))).toEqual(['after start']);
    });

    it('delivers to a push listener a message sent after start() resolved', async () => {
      await using broker = await startBroker();
      await using producer = await startProducer(broker.endpointFor(transport));
      await producer.send({ topic: 'orders', body: 'before start' });
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'billing', subscriptions: { orders: '*' } },
        () => ConsumeResult.SUCCESS,
      );
      await producer.send({ topic: 'orders', body: 'after start' });
      const [first] = await consumer.delivered(1);
      expect(text(first?.message.body ?? new Uint8Array())).toBe('after start');
    });
  },
);
