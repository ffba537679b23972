import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

const fastRetries = { startFrom: 'earliest', retryPolicy: { type: 'fixed', delayMs: 20 } } as const;

describe.each(transportsServing('stream'))(
  'P2: a delivery fails on FAILURE, a throw, or a consumption timeout, client- or broker-side (over %s)',
  (transport) => {
    it('retries after FAILURE and after a thrown error, recording why', async () => {
      await using broker = await startBroker();
      // Full history: the final success is recorded after the failures.
      await broker.admin.putGroup('billing', { ...fastRetries, history: 'full' });
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'billing', subscriptions: { orders: '*' } },
        (message) => {
          if (message.deliveryAttempt === 1) return ConsumeResult.FAILURE;
          if (message.deliveryAttempt === 2) throw new Error('card declined');
          return ConsumeResult.SUCCESS;
        },
      );
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({ topic: 'orders', body: 'x' });
      await consumer.delivered(3);
      const view = await eventually(
        () => broker.admin.getMessage(messageId),
        (message) => message.groups[0]?.state === 'committed',
      );
      expect(view.groups[0]?.history.map((entry) => [entry.result, entry.reason])).toEqual([
        ['failed', 'the listener returned FAILURE'],
        ['failed', 'card declined'],
        ['committed', undefined],
      ]);
    });

    it('fails a listener that runs past the client-side consumption timeout', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', fastRetries);
      let unblock: () => void = () => {};
      const forever = new Promise<void>((resolve) => (unblock = resolve));
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'billing', subscriptions: { orders: '*' }, consumptionTimeoutMs: 100, concurrency: 2 },
        async (message) => {
          if (message.deliveryAttempt === 1) await forever;
          return ConsumeResult.SUCCESS;
        },
      );
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({ topic: 'orders', body: 'x' });
      const [first, second] = await consumer.delivered(2);
      expect(second?.message.deliveryAttempt).toBe(2);
      expect((second?.atMs ?? 0) - (first?.atMs ?? 0)).toBeGreaterThanOrEqual(100);
      unblock();
      const view = await eventually(
        () => broker.admin.getMessage(messageId),
        (message) => message.groups[0]?.state === 'committed',
      );
      expect(view.groups[0]?.history[0]).toMatchObject({ result: 'failed', reason: 'consumption timeout' });
    });

    it('fails a delivery whose lease passes the group consumptionTimeoutMs without a result', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', { ...fastRetries, consumptionTimeoutMs: 150 });
      let unblock: () => void = () => {};
      const forever = new Promise<void>((resolve) => (unblock = resolve));
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        // The client would wait a minute; the broker's own deadline must fire first.
        { group: 'billing', subscriptions: { orders: '*' }, consumptionTimeoutMs: 60_000, concurrency: 2 },
        async (message) => {
          if (message.deliveryAttempt === 1) await forever;
          return ConsumeResult.SUCCESS;
        },
      );
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({ topic: 'orders', body: 'x' });
      const [, second] = await consumer.delivered(2);
      expect(second?.message).toMatchObject({ messageId, deliveryAttempt: 2 });
      const view = await eventually(
        () => broker.admin.getMessage(messageId),
        (message) => message.groups[0]?.state === 'committed',
      );
      const [timedOut] = view.groups[0]?.history ?? [];
      expect(timedOut).toMatchObject({ result: 'timedOut', reason: 'consumption timeout' });
      // The lease ran its whole timeout on the broker's clock. Not the gap between the two
      // arrivals at the client: forwarded through another broker, the first can arrive a few
      // milliseconds later than the second does (146 ms apart, once, in a spread run).
      expect((timedOut?.settledAt ?? 0) - (timedOut?.deliveredAt ?? 0)).toBeGreaterThanOrEqual(150);
      unblock();
    });
  },
);
