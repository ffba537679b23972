import { BrokerError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { oneMessageForSimpleConsumer } from './support/scenarios.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('request'))(
  'S3: ack commits while the lease is live; after the deadline it fails with INVALID_RECEIPT_HANDLE (over %s)',
  (transport) => {
    it('commits a live lease once; a second ack is refused', async () => {
      await using scenario = await oneMessageForSimpleConsumer({}, transport);
      const { broker, consumer } = scenario;
      const [message] = await consumer.receive(1, 30_000);
      if (!message) throw new Error('no message');
      await consumer.ack(message);
      await expect(consumer.ack(message)).rejects.toMatchObject({ code: 410 });
      expect((await broker.admin.getGroup('billing')).stats.committed).toBe(1);
    });

    it('refuses an ack after the deadline, and the message is delivered again, not committed', async () => {
      await using scenario = await oneMessageForSimpleConsumer({}, transport);
      const { broker, consumer } = scenario;
      const [expired] = await consumer.receive(1, 30);
      if (!expired) throw new Error('no message');
      // Wait for the event that proves the deadline passed: the message is leased again.
      const [redelivered] = await consumer.receive(1, 30_000);
      expect(redelivered?.messageId).toBe(expired.messageId);
      const error = await consumer.ack(expired).catch((thrown: unknown) => thrown);
      expect(error).toBeInstanceOf(BrokerError);
      expect(error).toMatchObject({ code: 410, errorName: 'INVALID_RECEIPT_HANDLE' });
      expect((await broker.admin.getGroup('billing')).stats.committed).toBe(0);
      if (!redelivered) throw new Error('no redelivery');
      await consumer.ack(redelivered);
      expect((await broker.admin.getGroup('billing')).stats.committed).toBe(1);
    });
  },
);
