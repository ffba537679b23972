import { receiptHandleOf, replaceReceiptHandle } from '@ricochet/client';
import { describe, expect, it } from 'vitest';
import { startSimpleConsumer } from './support/clients.js';
import { oneMessageForSimpleConsumer } from './support/scenarios.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('request'))(
  'S4: changeInvisibleDuration on a live lease sets the deadline to now + ms under a new handle (over %s)',
  (transport) => {
    it('extends the lease, swaps the handle in the message, and kills the old handle', async () => {
      await using scenario = await oneMessageForSimpleConsumer({ awaitDurationMs: 0 }, transport);
      const { broker, consumer } = scenario;
      // Room for the change to arrive while the lease is live, on a loaded machine.
      const [message] = await consumer.receive(1, 500);
      if (!message) throw new Error('no message');
      const oldHandle = receiptHandleOf(message);
      await consumer.changeInvisibleDuration(message, 60_000);
      expect(receiptHandleOf(message)).not.toBe(oldHandle);

      // The old lease would have ended by now; the new one keeps the message invisible.
      await using other = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 1_000,
      });
      expect(await other.receive(1, 30_000)).toEqual([]);

      // The message object now carries the new handle, so acking it commits.
      await consumer.ack(message);
      expect((await broker.admin.getGroup('billing')).stats).toMatchObject({ committed: 1, inflight: 0 });
    });

    it('refuses the old handle after a change', async () => {
      await using scenario = await oneMessageForSimpleConsumer({}, transport);
      const { consumer } = scenario;
      const [message] = await consumer.receive(1, 30_000);
      if (!message) throw new Error('no message');
      const oldHandle = receiptHandleOf(message);
      await consumer.changeInvisibleDuration(message, 30_000);
      const newHandle = receiptHandleOf(message);
      replaceReceiptHandle(message, oldHandle);
      await expect(consumer.ack(message)).rejects.toMatchObject({ code: 410 });
      replaceReceiptHandle(message, newHandle);
      await consumer.ack(message);
    });

    it('works only while the lease is live: after the deadline the change is refused', async () => {
      await using scenario = await oneMessageForSimpleConsumer({}, transport);
      const { consumer } = scenario;
      const [expired] = await consumer.receive(1, 20);
      if (!expired) throw new Error('no message');
      await consumer.receive(1, 30_000);
      await expect(consumer.changeInvisibleDuration(expired, 60_000)).rejects.toMatchObject({ code: 410 });
    });

    it('with 0 ms makes the message visible again at once', async () => {
      await using scenario = await oneMessageForSimpleConsumer({}, transport);
      const { consumer } = scenario;
      const [message] = await consumer.receive(1, 60_000);
      if (!message) throw new Error('no message');
      await consumer.changeInvisibleDuration(message, 0);
      const [again] = await consumer.receive(1, 60_000);
      expect(again).toMatchObject({ messageId: message.messageId, deliveryAttempt: 2 });
    });
  },
);
