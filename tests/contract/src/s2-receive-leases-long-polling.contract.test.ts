import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { oneMessageForSimpleConsumer } from './support/scenarios.js';
import { expectInLogOrder } from './support/store-queues.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('request'))(
  'S2: receive leases up to maxMessages until now + invisibleDuration; long polling (over %s)',
  (transport) => {
    it('leases at most maxMessages, and hides leased messages from other receives', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', { startFrom: 'earliest' });
      await using producer = await startProducer(broker.endpointFor(transport));
      await Promise.all(
        Array.from({ length: 5 }, (_, i) => producer.send({ topic: 'orders', body: `m${i}` })),
      );
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 0,
      });
      const first = await consumer.receive(3, 30_000);
      expect(first).toHaveLength(3);
      const second = await consumer.receive(32, 30_000);
      expect(second).toHaveLength(2);
      // The oldest first (with queues: each queue's oldest first), and none leased twice.
      expectInLogOrder(
        [...first, ...second].map((message) => text(message.body)),
        ['m0', 'm1', 'm2', 'm3', 'm4'],
      );
      expect(await consumer.receive(32, 30_000)).toEqual([]);
    });

    it('makes an unacked message Ready again at its deadline: retry interval = invisible duration − processing time', async () => {
      await using scenario = await oneMessageForSimpleConsumer({}, transport);
      const { consumer } = scenario;
      const leasedAt = Date.now();
      const [first] = await consumer.receive(1, 200);
      const [second] = await consumer.receive(1, 30_000);
      const reappearedAfterMs = Date.now() - leasedAt;
      expect(second?.messageId).toBe(first?.messageId);
      expect(second?.deliveryAttempt).toBe(2);
      // Invisible for the whole lease, visible again right after it (the long poll was waiting).
      expect(reappearedAfterMs).toBeGreaterThanOrEqual(200);
    });

    it('holds an empty receive open until a message arrives', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', { startFrom: 'earliest' });
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 10_000,
      });
      const waiting = consumer.receive(10, 30_000);
      await using producer = await startProducer(broker.endpointFor(transport));
      await producer.send({ topic: 'orders', body: 'late' });
      const messages = await waiting;
      expect(messages.map((message) => text(message.body))).toEqual(['late']);
    });

    it('answers an empty long poll with nothing after awaitDurationMs', async () => {
      await using broker = await startBroker();
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 100,
      });
      const startedAt = Date.now();
      expect(await consumer.receive(10, 30_000)).toEqual([]);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(90);
    });

    it('starts a new group at the latest offset unless it asks for earliest', async () => {
      await using broker = await startBroker();
      await using producer = await startProducer(broker.endpointFor(transport));
      await producer.send({ topic: 'orders', body: 'before' });
      await using latest = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'latest',
        subscriptions: { orders: '*' },
        awaitDurationMs: 0,
      });
      expect(await latest.receive(10, 30_000)).toEqual([]);
      await producer.send({ topic: 'orders', body: 'after' });
      expect((await latest.receive(10, 30_000)).map((message) => text(message.body))).toEqual(['after']);
    });
  },
);
