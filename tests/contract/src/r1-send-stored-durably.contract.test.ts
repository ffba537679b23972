import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { expectInLogOrder, expectNewOffsets } from './support/store-queues.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('request'))(
  'R1: send resolves only once the message is stored durably (over %s)',
  (transport) => {
    it('returns { messageId, offset } and the message survives a broker restart on the same data directory', async () => {
      let broker = await startBroker();
      try {
        await broker.admin.putGroup('billing', { startFrom: 'earliest' });
        {
          await using producer = await startProducer(broker.endpointFor(transport));
          const receipts = await Promise.all(
            ['a', 'b', 'c'].map((body) => producer.send({ topic: 'orders', body, keys: [`order-${body}`] })),
          );
          expectNewOffsets(receipts.map((receipt) => receipt.offset));
          for (const receipt of receipts) expect(receipt.messageId).toMatch(/^[0-9a-f]{32}$/);
        }
        broker = await broker.restart();
        await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
          group: 'billing',
          subscriptions: { orders: '*' },
        });
        const messages = await consumer.receive(10, 30_000);
        expectInLogOrder(
          messages.map((message) => `${text(message.body)}:${message.keys}`),
          ['a:order-a', 'b:order-b', 'c:order-c'],
        );
      } finally {
        await broker.close();
      }
    });

    it('keeps the message id, tag, keys and properties the producer gave', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('audit', { startFrom: 'earliest' });
      await using producer = await startProducer(broker.endpointFor(transport));
      const { messageId } = await producer.send({
        topic: 'orders',
        body: new Uint8Array([0, 255, 7]),
        tag: 'created',
        keys: ['k1', 'k2'],
        properties: { region: 'eu' },
      });
      const stored = await broker.admin.getMessage(messageId);
      expect(stored.message).toMatchObject({
        messageId,
        topic: 'orders',
        bodyBase64: Buffer.from([0, 255, 7]).toString('base64'),
      });
      expectNewOffsets([stored.message.offset]);
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'audit',
        subscriptions: { orders: 'created' },
      });
      const [message] = await consumer.receive(1, 30_000);
      expect(message).toMatchObject({
        messageId,
        tag: 'created',
        keys: ['k1', 'k2'],
        properties: { region: 'eu' },
      });
      expect(message?.body).toEqual(new Uint8Array([0, 255, 7]));
    });
  },
);
