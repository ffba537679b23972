import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('stream'))(
  "P3: retry delays follow the group's policy, counted from the failure; the last step repeats (over %s)",
  (transport) => {
    it('waits each step of a stepped policy, never less, and repeats the last one', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', {
        startFrom: 'earliest',
        // Steps far apart, so a loaded machine's scheduling delays cannot make one look like the other.
        retryPolicy: { type: 'stepped', delaysMs: [100, 1_500] },
      });
      const failedAt: number[] = [];
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'billing', subscriptions: { orders: '*' } },
        (message) => {
          if (message.deliveryAttempt <= 3) {
            failedAt.push(performance.now());
            return ConsumeResult.FAILURE;
          }
          return ConsumeResult.SUCCESS;
        },
      );
      await using producer = await startProducer(broker.endpointFor(transport));
      await producer.send({ topic: 'orders', body: 'x' });
      const deliveries = await consumer.delivered(4);
      const gaps = deliveries.slice(1).map((delivery, i) => delivery.atMs - (failedAt[i] ?? 0));
      expect(gaps[0]).toBeGreaterThanOrEqual(100);
      expect(gaps[1]).toBeGreaterThanOrEqual(1_500);
      expect(gaps[2]).toBeGreaterThanOrEqual(1_500);
      // And not the next step up: the 100 ms step was not stretched to the 1 500 ms one.
      expect(gaps[0]).toBeLessThan(1_500);
    });

    it('lets retryAfter(ms) set one retry’s delay, then the policy applies again', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', {
        startFrom: 'earliest',
        retryPolicy: { type: 'fixed', delayMs: 50 },
      });
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'billing', subscriptions: { orders: '*' } },
        (message) => {
          if (message.deliveryAttempt === 1) return ConsumeResult.retryAfter(1_500);
          if (message.deliveryAttempt === 2) return ConsumeResult.FAILURE;
          return ConsumeResult.SUCCESS;
        },
      );
      await using producer = await startProducer(broker.endpointFor(transport));
      await producer.send({ topic: 'orders', body: 'x' });
      const [first, second, third] = await consumer.delivered(3);
      expect((second?.atMs ?? 0) - (first?.atMs ?? 0)).toBeGreaterThanOrEqual(1_500);
      expect((third?.atMs ?? 0) - (second?.atMs ?? 0)).toBeGreaterThanOrEqual(50);
      // The hint held for one retry only: the next is the policy's 50 ms, far from 1 500.
      expect((third?.atMs ?? 0) - (second?.atMs ?? 0)).toBeLessThan(1_500);
    });
  },
);
