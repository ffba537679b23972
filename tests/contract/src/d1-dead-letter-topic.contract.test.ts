import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('request'))(
  'D1: the DLQ of group G is the topic %DLQ%G, consumable like any topic (over %s)',
  (transport) => {
    it('keeps the messageId, body and properties, and adds the origin topic, attempts and last failure reason', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', { startFrom: 'earliest', maxRetries: 0 });
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({
        topic: 'orders',
        body: 'poison',
        tag: 'created',
        properties: { tenant: 'acme' },
      });
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
      });
      await consumer.receive(1, 20);

      await broker.admin.putGroup('ops', { startFrom: 'earliest' });
      await using dlqReader = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'ops',
        subscriptions: { '%DLQ%billing': '*' },
        awaitDurationMs: 10_000,
      });
      const [dead] = await dlqReader.receive(1, 30_000);
      expect(dead).toMatchObject({
        messageId,
        topic: '%DLQ%billing',
        tag: 'created',
        properties: { tenant: 'acme' },
        deliveryAttempt: 1,
        deadLetter: { originTopic: 'orders', attempts: 1, reason: 'invisible duration expired without ack' },
      });
      expect(text(dead?.body ?? new Uint8Array())).toBe('poison');
      if (!dead) throw new Error('no DLQ message');
      await dlqReader.ack(dead);

      const listed = await broker.admin.listDlq('billing');
      expect(listed.messages).toMatchObject([{ messageId, originTopic: 'orders', attempts: 1 }]);
      expect(listed.cursor).toBeNull();
      expect((await broker.admin.getGroup('billing')).stats.dlq).toBe(1);
    });

    it('gives each group its own DLQ: a failure in one group never touches another', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('strict', { startFrom: 'earliest', maxRetries: 0 });
      await broker.admin.putGroup('patient', { startFrom: 'earliest' });
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({ topic: 'orders', body: 'x' });
      await using strict = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'strict',
        subscriptions: { orders: '*' },
      });
      await using patient = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'patient',
        subscriptions: { orders: '*' },
      });
      await strict.receive(1, 20);
      const [ok] = await patient.receive(1, 30_000);
      if (!ok) throw new Error('no message');
      await patient.ack(ok);
      await broker.admin.putGroup('ops', { startFrom: 'earliest' });
      await using dlqReader = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'ops',
        subscriptions: { '%DLQ%strict': '*' },
        awaitDurationMs: 10_000,
      });
      expect((await dlqReader.receive(1, 30_000))[0]?.messageId).toBe(messageId);
      const view = await broker.admin.getMessage(messageId);
      const states = Object.fromEntries(view.groups.map((group) => [group.group, group.state]));
      expect(states).toMatchObject({ strict: 'dlq', patient: 'committed' });
      expect((await broker.admin.getGroup('patient')).stats).toMatchObject({ dlq: 0, committed: 1 });
    });
  },
);
