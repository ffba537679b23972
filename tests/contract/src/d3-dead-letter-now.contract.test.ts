import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { expectInLogOrder } from './support/store-queues.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('stream'))(
  'D3: dead-letter now moves a message to the DLQ at once, whatever attempts remain (over %s)',
  (transport) => {
    it('takes a push listener at its word: ConsumeResult.deadLetter(reason) on the first delivery', async () => {
      await using broker = await startBroker();
      // 16 retries left, and a retry delay that would show up in the test's time if one were taken.
      await broker.admin.putGroup('billing', { retryPolicy: { type: 'fixed', delayMs: 60_000 } });
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        { group: 'billing', subscriptions: { orders: '*' } },
        (message) =>
          message.tag === 'poison' ? ConsumeResult.deadLetter('unparseable order') : ConsumeResult.SUCCESS,
      );
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({ topic: 'orders', body: '{not json', tag: 'poison' });
      await producer.send({ topic: 'orders', body: '{"ok":true}', tag: 'fine' });
      await consumer.delivered(2);

      const stats = await eventually(
        () => broker.admin.getGroup('billing').then((group) => group.stats),
        (s) => s.dlq === 1 && s.committed === 1,
      );
      expect(stats).toMatchObject({ dlq: 1, committed: 1, waitingRetry: 0, inflight: 0, ready: 0 });
      const view = await broker.admin.getMessage(messageId);
      expect(view.groups[0]).toMatchObject({ group: 'billing', state: 'dlq' });
      expect(view.groups[0]?.history.map(({ result, reason }) => ({ result, reason }))).toEqual([
        { result: 'deadLettered', reason: 'unparseable order' },
      ]);
      const listed = await broker.admin.listDlq('billing');
      expect(listed.messages).toMatchObject([{ messageId, attempts: 1, reason: 'unparseable order' }]);
      // Never delivered again: the only deliveries are the two above.
      expectInLogOrder(
        consumer.deliveries.map(({ message }) => message.tag),
        ['poison', 'fine'],
      );
    });

    it('lets a simple consumer dead-letter a live lease, and refuses it once the message is settled', async () => {
      await using broker = await startBroker();
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 0,
      });
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({ topic: 'orders', body: 'v0 payload' });
      const [message] = await consumer.receive(1, 30_000);
      if (!message) throw new Error('no message');
      await consumer.deadLetter(message, 'schema v0 is no longer supported');
      await expect(consumer.deadLetter(message)).rejects.toMatchObject({ code: 410 });
      await expect(consumer.ack(message)).rejects.toMatchObject({ code: 410 });

      expect((await broker.admin.getGroup('billing')).stats).toMatchObject({ dlq: 1, inflight: 0, ready: 0 });
      const listed = await broker.admin.listDlq('billing');
      expect(listed.messages).toMatchObject([
        { messageId, originTopic: 'orders', attempts: 1, reason: 'schema v0 is no longer supported' },
      ]);
      // Settled: nothing of the group is Ready or leased any more.
      expect(await consumer.receive(1, 30_000)).toEqual([]);
    });

    it('refuses a simple dead-letter after the lease deadline, as an ack is refused (S3)', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', { maxRetries: 5 });
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 2_000,
      });
      await using producer = await startProducer(broker.endpointFor(transport));
      await producer.send({ topic: 'orders', body: 'slow' });
      const [first] = await consumer.receive(1, 20);
      if (!first) throw new Error('no message');
      // The lease ran out: the message is delivered again, and the old handle is dead.
      const [again] = await consumer.receive(1, 30_000);
      expect(again?.deliveryAttempt).toBe(2);
      await expect(consumer.deadLetter(first, 'too late')).rejects.toMatchObject({ code: 410 });
      expect((await broker.admin.getGroup('billing')).stats.dlq).toBe(0);
    });
  },
);
