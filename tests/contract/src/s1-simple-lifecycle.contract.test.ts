import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('request'))(
  'S1: Ready → Inflight → Commit | Ready (lease expired) | DLQ, no WaitingRetry (over %s)',
  (transport) => {
    it('moves a message through Ready, Inflight, Ready again and Commit, never WaitingRetry', async () => {
      await using broker = await startBroker();
      // Full history: the success ends the path the history shows.
      await broker.admin.putGroup('billing', { startFrom: 'earliest', history: 'full' });
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({ topic: 'orders', body: 'x' });
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
      });

      // Invisible long enough for the two admin reads below to see it Inflight on a loaded machine
      // (1 s was not, spread over three brokers: each read forwarded to the queues' owners).
      const [leased] = await consumer.receive(1, 3_000);
      expect((await broker.admin.getMessage(messageId)).groups[0]).toMatchObject({
        state: 'inflight',
        deliveryAttempt: 1,
      });
      expect((await broker.admin.getGroup('billing')).stats).toMatchObject({ inflight: 1, waitingRetry: 0 });

      // Not acked: at its deadline the lease ends and the message is Ready again (a long poll sees it).
      const [again] = await consumer.receive(1, 30_000);
      expect(again?.messageId).toBe(leased?.messageId);
      expect(again?.deliveryAttempt).toBe(2);
      if (!again) throw new Error('no redelivery');
      await consumer.ack(again);

      const view = await broker.admin.getMessage(messageId);
      expect(view.groups[0]?.state).toBe('committed');
      expect(view.groups[0]?.history.map((entry) => entry.result)).toEqual(['leaseExpired', 'committed']);
      expect((await broker.admin.getGroup('billing')).stats).toMatchObject({
        ready: 0,
        inflight: 0,
        waitingRetry: 0,
        committed: 1,
      });
    });
  },
);
