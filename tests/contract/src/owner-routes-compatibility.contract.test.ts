import { Connection } from '@ricochet/client';
import { describe, expect, it } from 'vitest';
import { FAST_BACKOFF, startProducer } from './support/clients.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

/**
 * Issue 42 item 1, compatibility (docs/protocol/README.md#versioning): this client against a broker
 * that does not answer the `queueMap` feature works as today. A broker that predates the feature
 * ignores `hello.features` (an unknown field) and sends no `welcome.features` and no `queueMap`
 * frame; a broker of one store, as this one, does exactly that on the wire, since it has no map
 * to tell. The other direction (an older client against a spread broker) is in
 * `postgres-spread-owner-routes.contract.test.ts`.
 */
describe.each(transportsServing('stream'))(
  'a producer that asks for the queue map (over %s)',
  (transport) => {
    it('is granted nothing by a broker without a map, and sends as it always did', async () => {
      await using broker = await startBroker();
      const endpoint = broker.endpointFor(transport);
      await using connection = new Connection({
        endpoint,
        reconnectBackoff: FAST_BACKOFF,
        features: ['queueMap'],
      });
      await connection.connect();
      expect(connection.session?.features).toEqual([]);

      await using producer = await startProducer(endpoint);
      const receipts = await Promise.all(
        Array.from({ length: 50 }, (_, n) => producer.send({ topic: 'orders', body: `m${n}` })),
      );
      expect(new Set(receipts.map((receipt) => receipt.offset)).size).toBe(50);
      const topic = await broker.admin.getTopic('orders');
      expect(topic.stats.messages).toBe(50);
    });
  },
);
