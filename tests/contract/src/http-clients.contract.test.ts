import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBroker } from '@ricochet/broker';
import { ClientError } from '@ricochet/client';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { AdminApi } from './support/admin.js';
import { startProducer, startSimpleConsumer } from './support/clients.js';
import { AuthFileFixture } from './support/security.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

/**
 * What the producer and the simple consumer add on every transport that serves them, HTTP
 * (docs/protocol/transports.md#http) included, with the clients unchanged: dead-lettering by the
 * consumer, and tokens. The rules themselves (R1, S1–S5, …) run over every transport in their own
 * files (`transportsServing('request')`).
 */

const SUBSCRIPTIONS = { orders: '*' } as const;

describe.each(transportsServing('request'))('producer and simple consumer over %s', (transport) => {
  it('dead-letters on the consumer’s word, into the group’s DLQ', async () => {
    await using broker = await startBroker();
    const endpoint = broker.endpointFor(transport);
    await using consumer = await startSimpleConsumer(endpoint, {
      group: 'billing',
      subscriptions: SUBSCRIPTIONS,
    });
    await using producer = await startProducer(endpoint);
    const { messageId } = await producer.send({ topic: 'orders', body: 'poison' });
    const [message] = await consumer.receive(1, 30_000);
    if (!message) throw new Error('no message');
    await consumer.deadLetter(message, 'cannot parse');
    expect((await broker.admin.listDlq('billing')).messages).toMatchObject([{ messageId }]);
  });

  it('refuses a missing token with 401, not retried', async () => {
    using auth = new AuthFileFixture({ 'orders-service': { publish: ['orders'] } });
    await using broker = await startBroker({ authFile: auth.path });
    const endpoint = broker.endpointFor(transport);
    await expect(startProducer(endpoint)).rejects.toMatchObject({ code: 401 });
    await using producer = await startProducer(endpoint, { token: auth.token('orders-service') });
    await expect(producer.send({ topic: 'orders', body: 'x' })).resolves.toMatchObject({ offset: 0 });
    await expect(producer.send({ topic: 'payments', body: 'x' })).rejects.toMatchObject({ code: 403 });
  });
});

describe('push consumption over HTTP', () => {
  it.each(['http://127.0.0.1:1', 'https://broker.example'])(
    'is refused at construction for %s',
    (endpoint) => {
      const construct = () =>
        new PushConsumer({
          endpoint,
          group: 'billing',
          subscriptions: SUBSCRIPTIONS,
          listener: () => ConsumeResult.SUCCESS,
        });
      expect(construct).toThrow(ClientError);
      expect(construct).toThrow(/needs a stream/);
    },
  );
});

describe('the HTTP transport and the reconnect policy (C1)', () => {
  it('retries a send whose requests fail until the broker is back, stored once', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-http-c1-'));
    const config = { host: '127.0.0.1', logLevel: 'silent', dataDir } as const;
    let broker = await buildBroker({ ...config, port: 0 });
    try {
      const { port } = await broker.listen();
      await using producer = await startProducer(`http://127.0.0.1:${port}`);
      await producer.send({ topic: 'orders', body: 'before', messageId: 'c1-before' });
      await broker.close();
      // Every request fails while the broker is away; the producer keeps retrying by its policy.
      const sending = producer.send({ topic: 'orders', body: 'across', messageId: 'c1-across' });
      broker = await buildBroker({ ...config, port });
      await broker.listen();
      await expect(sending).resolves.toMatchObject({ messageId: 'c1-across', offset: 1 });
      const admin = new AdminApi(`http://127.0.0.1:${port}`);
      expect((await admin.getTopic('orders')).stats.messages).toBe(2);
    } finally {
      await broker.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
