import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { expectInLogOrder } from './support/store-queues.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('request'))(
  'groups consume independently (DESIGN.md §2) (over %s)',
  (transport) => {
    it('delivers every message to every group, and an ack or a lease in one group leaves the other alone', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('a', { startFrom: 'earliest' });
      await broker.admin.putGroup('b', { startFrom: 'earliest' });
      await using producer = await startProducer(broker.endpointFor(transport));
      await producer.send({ topic: 'orders', body: 'one' });
      await producer.send({ topic: 'orders', body: 'two' });
      await using consumerA = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'a',
        subscriptions: { orders: '*' },
        awaitDurationMs: 0,
      });
      await using consumerB = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'b',
        subscriptions: { orders: '*' },
        awaitDurationMs: 0,
      });
      const fromA = await consumerA.receive(10, 30_000);
      for (const message of fromA) await consumerA.ack(message);
      const fromB = await consumerB.receive(10, 30_000);
      expectInLogOrder(
        fromA.map((m) => text(m.body)),
        ['one', 'two'],
      );
      expectInLogOrder(
        fromB.map((m) => text(m.body)),
        ['one', 'two'],
      );
      expect((await broker.admin.getGroup('a')).stats).toMatchObject({ committed: 2, inflight: 0 });
      expect((await broker.admin.getGroup('b')).stats).toMatchObject({ committed: 0, inflight: 2 });
    });

    it('filters by tag per group', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('paid-only', { startFrom: 'earliest' });
      await using producer = await startProducer(broker.endpointFor(transport));
      await producer.send({ topic: 'orders', body: 'c', tag: 'created' });
      await producer.send({ topic: 'orders', body: 'p', tag: 'paid' });
      await producer.send({ topic: 'orders', body: 'n' });
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'paid-only',
        subscriptions: { orders: 'paid || refunded' },
        awaitDurationMs: 0,
      });
      expect((await consumer.receive(10, 30_000)).map((m) => text(m.body))).toEqual(['p']);
    });
  },
);
