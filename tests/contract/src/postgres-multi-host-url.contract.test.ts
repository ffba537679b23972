import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { closedPort } from './support/closed-port.js';
import { startBroker } from './support/test-broker.js';
import { postgresDatabase } from './support/test-store.js';

/**
 * DESIGN.md §9: a setup without a floating address names every PostgreSQL host in libpq's
 * multi-host form, and the driver connects to the one that takes writes. That URL is no WHATWG
 * URL: a broker given one exited at start, before serving anything.
 */
describe('PostgreSQL store: libpq’s multi-host URL', () => {
  it('starts on postgres://user@h1,h2/db?target_session_attrs=read-write and stores on the host that answers', async () => {
    const single = new URL(await postgresDatabase(`multihost_${randomBytes(6).toString('hex')}`));
    // The first host listens on nothing, as a failed primary would: the driver goes on to the next.
    const deadHost = `127.0.0.1:${await closedPort()}`;
    const credentials = single.password === '' ? single.username : `${single.username}:${single.password}`;
    const store = `postgres://${credentials}@${deadHost},${single.host}${single.pathname}?target_session_attrs=read-write`;
    expect(() => new URL(store)).toThrow();

    await using broker = await startBroker({ store, storeQueues: 1, storeSpread: false });
    await using producer = await startProducer(broker.endpoint);
    await broker.admin.putGroup('billing', { startFrom: 'earliest' });
    const { messageId } = await producer.send({ topic: 'orders', body: 'paid' });
    await using consumer = await startSimpleConsumer(broker.endpoint, {
      group: 'billing',
      subscriptions: { orders: '*' },
    });
    const [received] = await consumer.receive(1, 30_000);
    expect(received?.messageId).toBe(messageId);
    expect(text(received?.body ?? new Uint8Array())).toBe('paid');
  });
});
