import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { expectNewOffsets } from './support/store-queues.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

describe.each(transportsServing('request'))(
  'R3: a retried send reuses its messageId and is never stored twice (over %s)',
  (transport) => {
    it('answers a send repeated inside the dedup window with the original receipt', async () => {
      await using broker = await startBroker();
      await broker.admin.putGroup('billing', { startFrom: 'earliest' });
      await using producer = await startProducer(broker.endpointFor(transport));
      const messageId = '019aa6b1f2c07d3e8a41b5c6d7e8f901';
      const first = await producer.send({ topic: 'orders', body: 'once', messageId });
      await producer.send({ topic: 'orders', body: 'other' });
      // The same id again, as a producer retrying after a lost answer would send it.
      const again = await producer.send({ topic: 'orders', body: 'once', messageId });
      expect(again).toEqual(first);

      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 0,
      });
      const messages = await consumer.receive(32, 30_000);
      expect(messages.map((message) => message.messageId).filter((id) => id === messageId)).toHaveLength(1);
      expect(messages).toHaveLength(2);
    });

    it('deduplicates copies racing each other before the first one committed', async () => {
      await using broker = await startBroker();
      await using producer = await startProducer(broker.endpointFor(transport));
      const messageId = '019aa6b1f2c07d3e8a41b5c6d7e8f902';
      const receipts = await Promise.all(
        [1, 2, 3].map(() => producer.send({ topic: 'orders', body: 'x', messageId })),
      );
      expect(new Set(receipts.map((receipt) => receipt.offset)).size).toBe(1);
      expectNewOffsets([receipts[0]?.offset ?? -1]);
    });

    it('stores the id again once the window has passed', async () => {
      await using broker = await startBroker({ dedupWindowMs: 0 });
      await using producer = await startProducer(broker.endpointFor(transport));
      const messageId = '019aa6b1f2c07d3e8a41b5c6d7e8f903';
      const first = await producer.send({ topic: 'orders', body: 'x', messageId });
      const second = await producer.send({ topic: 'orders', body: 'x', messageId });
      expectNewOffsets([first.offset, second.offset]);
    });
  },
);
