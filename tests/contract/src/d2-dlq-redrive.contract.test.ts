import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('stream'))(
  'D2: the admin API lists a group’s DLQ and redrives it to the origin topic, for that group only, rate-capped (over %s)',
  (transport) => {
    it('lists with a cursor, redrives by id and all, with a fresh attempt count, and leaves other groups alone', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', { startFrom: 'earliest', maxRetries: 0 });
      await broker.admin.putGroup('audit', { startFrom: 'earliest' });
      let healthy = false;
      await using billing = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'billing', subscriptions: { orders: '*' } },
        () => (healthy ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE),
      );
      await using audit = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'audit', subscriptions: { orders: '*' } },
        () => ConsumeResult.SUCCESS,
      );
      await using producer = await startProducer(broker.endpointFor(transport));
      const ids = [];
      for (const body of ['a', 'b', 'c'])
        ids.push((await producer.send({ topic: 'orders', body })).messageId);
      await audit.delivered(3);
      await eventually(
        () => broker.admin.getGroup('billing'),
        (group) => group.stats.dlq === 3,
      );

      // Failures are settled in batches: the DLQ's order is the order they were processed in.
      const firstPage = await broker.admin.listDlq('billing', '?limit=2');
      expect(firstPage.messages).toHaveLength(2);
      expect(firstPage.cursor).not.toBeNull();
      const secondPage = await broker.admin.listDlq('billing', `?limit=2&cursor=${firstPage.cursor}`);
      expect(secondPage.messages).toHaveLength(1);
      expect(secondPage.cursor).toBeNull();
      const listed = [...firstPage.messages, ...secondPage.messages].map((m) => m.messageId);
      expect([...listed].sort()).toEqual([...ids].sort());
      expect(firstPage.messages[0]).toMatchObject({
        originTopic: 'orders',
        attempts: 1,
        reason: 'the listener returned FAILURE',
      });

      healthy = true;
      expect(await broker.admin.redrive('billing', { messageIds: [ids[1] ?? ''] })).toEqual({ accepted: 1 });
      const [, , , redriven] = await billing.delivered(4);
      expect(redriven?.message).toMatchObject({ messageId: ids[1], deliveryAttempt: 1 });
      expect((await broker.admin.listDlq('billing')).messages.map((m) => m.messageId).sort()).toEqual(
        [ids[0], ids[2]].sort(),
      );

      const startedAt = performance.now();
      expect(await broker.admin.redrive('billing', { ratePerSecond: 10 })).toEqual({ accepted: 2 });
      const all = await billing.delivered(6);
      // 10 per second: the second message goes at least 100 ms after the first.
      expect(performance.now() - startedAt).toBeGreaterThanOrEqual(90);
      expect(
        all
          .slice(4)
          .map((d) => d.message.messageId)
          .sort(),
      ).toEqual([ids[0], ids[2]].sort());
      const stats = await eventually(
        () => broker.admin.getGroup('billing').then((group) => group.stats),
        (s) => s.committed === 3,
      );
      expect(stats).toMatchObject({ dlq: 0, committed: 3 });
      // The other group consumed each message once and saw no redelivery.
      expect(audit.deliveries).toHaveLength(3);
      expect((await broker.admin.getGroup('audit')).stats.committed).toBe(3);
    });

    it('answers an unknown group with 404 and a bad body with 400', async () => {
      await using broker = await startBroker();
      expect((await broker.admin.fetch('GET', '/v1/groups/ghost/dlq')).status).toBe(404);
      await broker.admin.putGroup('billing', {});
      expect(
        (await broker.admin.fetch('POST', '/v1/groups/billing/dlq/redrive', { ratePerSecond: 0 })).status,
      ).toBe(400);
    });
  },
);
