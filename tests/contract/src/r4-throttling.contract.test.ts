import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { clusterCounter } from './support/cluster-metrics.js';
import { expectNewOffsets } from './support/store-queues.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('request'))(
  'R4 with R2: a topic past its backlog limit throttles sends with 530, which the producer retries with backoff (over %s)',
  (transport) => {
    it('retries 530 maxAttempts times, rejects with 530, and sends again once the backlog drains', async () => {
      await using broker = await startBroker();
      await broker.admin.putTopic('orders', { type: 'normal', maxBacklogMessages: 2 });
      await broker.admin.putGroup('billing', { startFrom: 'earliest' });
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 0,
      });
      expect(await consumer.receive(1, 30_000)).toEqual([]);

      await using producer = await startProducer(broker.endpointFor(transport), {
        maxAttempts: 3,
        retryBackoff: { initialMs: 5, multiplier: 1.6, jitter: 0.2, maxMs: 50 },
      });
      await producer.send({ topic: 'orders', body: '1' });
      await producer.send({ topic: 'orders', body: '2' });
      const startedAt = Date.now();
      await expect(producer.send({ topic: 'orders', body: '3' })).rejects.toMatchObject({
        code: 530,
        retryable: true,
      });
      // Three attempts, two backoff waits between them (5 ms, then 8 ms ± 20 %).
      expect(await clusterCounter(broker, 'ricochet_requests_rejected_total{code="530"}')).toBe(3);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(5 + 6);

      const [oldest] = await consumer.receive(1, 30_000);
      if (!oldest) throw new Error('no message');
      await consumer.ack(oldest);
      expectNewOffsets([(await producer.send({ topic: 'orders', body: '3' })).offset], 2);
    });
  },
);
