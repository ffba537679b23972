import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { SimpleConsumer } from '@ricochet/simple-consumer';
import { describe, expect, it } from 'vitest';
import { FAST_BACKOFF, startProducer, startSimpleConsumer, text } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { AuthFileFixture, adminRequest, TokenSocket } from './support/security.js';
import { startBroker } from './support/test-broker.js';
import { transportsServing } from './support/transports.js';

/** DESIGN.md §7's principals, plus a second consumer for the settle checks. */
const PRINCIPALS = {
  ops: { admin: 'write', metrics: true },
  'orders-service': { publish: ['orders', 'payments-*'] },
  'billing-worker': { consume: [{ group: 'billing-*', topics: ['orders', '%DLQ%billing-*'] }] },
  'shipping-worker': { consume: [{ group: 'shipping', topics: ['orders'] }] },
} as const;

async function startSecuredBroker(auth: AuthFileFixture) {
  // Full history: the settling principal is checked on successes' entries too.
  return startBroker({ authFile: auth.path, deliveryHistory: 'full' });
}

/** `GET` as ops: the status, and the JSON body when there is one. */
async function opsGet(endpoint: string, auth: AuthFileFixture, path: string) {
  const response = await adminRequest(endpoint, 'GET', path, { token: auth.token('ops') });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe.each(transportsServing('stream'))(
  'principals and permissions on every transport (DESIGN.md §7) (over %s)',
  (transport) => {
    it('answers a missing or unknown token with 401, then closes 1008', async () => {
      using auth = new AuthFileFixture(PRINCIPALS);
      await using broker = await startSecuredBroker(auth);
      // The raw frames on WebSocket; security-tcp-stream checks the same on the TCP listener.
      for (const token of transport === 'ws' ? [undefined, 'not-a-token-anyone-holds'] : []) {
        await using session = await TokenSocket.connect(broker.endpoint, token);
        expect(await session.next()).toMatchObject({ type: 'error', code: 401 });
        expect(await session.closed).toBe(1008);
      }
      // The real clients surface it as the 401 it is, without retrying.
      for (const token of [undefined, 'wrong']) {
        const refused = startProducer(broker.endpointFor(transport), token === undefined ? {} : { token });
        await expect(refused).rejects.toMatchObject({ code: 401 });
      }
      await using producer = await startProducer(broker.endpointFor(transport), {
        token: auth.token('orders-service'),
      });
      expect(await producer.send({ topic: 'orders', body: 'let in' })).toMatchObject({ offset: 0 });
    });

    it('refuses a send to a topic the publisher may not publish to with 403, and stores nothing of it', async () => {
      using auth = new AuthFileFixture(PRINCIPALS);
      await using broker = await startSecuredBroker(auth);
      await using producer = await startProducer(broker.endpointFor(transport), {
        token: auth.token('orders-service'),
      });
      await expect(producer.send({ topic: 'audit', body: 'no' })).rejects.toMatchObject({ code: 403 });
      // Sent in one tick, so in one frame: the permitted message is stored, the other refused alone.
      const [permitted, refused] = await Promise.allSettled([
        producer.send({ topic: 'payments-eu', body: 'yes' }),
        producer.send({ topic: 'audit', body: 'no' }),
      ]);
      expect(permitted).toMatchObject({ status: 'fulfilled', value: { offset: 0 } });
      expect(refused).toMatchObject({ status: 'rejected', reason: { code: 403 } });
      expect((await opsGet(broker.endpoint, auth, '/v1/topics/audit')).status).toBe(404);
      expect((await opsGet(broker.endpoint, auth, '/v1/topics/payments-eu')).body).toMatchObject({
        stats: { messages: 1 },
      });
    });

    it('refuses a consumer limited to billing-* another group or topic with 403, and creates nothing', async () => {
      using auth = new AuthFileFixture(PRINCIPALS);
      await using broker = await startSecuredBroker(auth);
      const token = auth.token('billing-worker');
      const simple = new SimpleConsumer({
        endpoint: broker.endpointFor(transport),
        token,
        group: 'shipping',
        subscriptions: { orders: '*' },
        reconnectBackoff: FAST_BACKOFF,
      });
      await expect(simple.start()).rejects.toMatchObject({ code: 403 });
      await simple.close();
      const push = new PushConsumer({
        endpoint: broker.endpointFor(transport),
        token,
        group: 'shipping',
        subscriptions: { orders: '*' },
        listener: () => {
          throw new Error('never delivered');
        },
        reconnectBackoff: FAST_BACKOFF,
      });
      await expect(push.start()).rejects.toMatchObject({ code: 403 });
      await push.close();
      // Its own group, but a topic its grant does not name.
      const otherTopic = new SimpleConsumer({
        endpoint: broker.endpointFor(transport),
        token,
        group: 'billing-eu',
        subscriptions: { orders: '*', payments: '*' },
        reconnectBackoff: FAST_BACKOFF,
      });
      await expect(otherTopic.start()).rejects.toMatchObject({ code: 403 });
      await otherTopic.close();
      for (const path of ['/v1/groups/shipping', '/v1/groups/billing-eu', '/v1/topics/payments'])
        expect((await opsGet(broker.endpoint, auth, path)).status, path).toBe(404);
    });

    it('consumes within the grant, and records the settling principal in the delivery history', async () => {
      using auth = new AuthFileFixture(PRINCIPALS);
      await using broker = await startSecuredBroker(auth);
      await using consumer = await startSimpleConsumer(broker.endpointFor(transport), {
        token: auth.token('billing-worker'),
        group: 'billing-eu',
        subscriptions: { orders: '*' },
      });
      await using producer = await startProducer(broker.endpointFor(transport), {
        token: auth.token('orders-service'),
      });
      const { messageId } = await producer.send({ topic: 'orders', body: 'order 1' });
      const [message] = await consumer.receive(1, 30_000);
      expect(message && text(message.body)).toBe('order 1');
      if (message) await consumer.ack(message);
      const view = await opsGet(broker.endpoint, auth, `/v1/messages/${messageId}`);
      expect(view.body).toMatchObject({
        groups: [
          {
            group: 'billing-eu',
            state: 'committed',
            history: [{ result: 'committed', principal: 'billing-worker' }],
          },
        ],
      });
    });

    it("records a push consumer's principal too, for a broadcasting group's instance", async () => {
      using auth = new AuthFileFixture(PRINCIPALS);
      await using broker = await startSecuredBroker(auth);
      const ops = auth.token('ops');
      const put = await adminRequest(broker.endpoint, 'PUT', '/v1/groups/billing-audit', {
        token: ops,
        body: { consumeMode: 'broadcasting' },
      });
      expect(put.status).toBe(200);
      await using consumer = await startRecordingConsumer(
        broker.endpointFor(transport),
        {
          token: auth.token('billing-worker'),
          group: 'billing-audit',
          subscriptions: { orders: '*' },
          clientId: 'audit-1',
        },
        () => ConsumeResult.SUCCESS,
      );
      await using producer = await startProducer(broker.endpointFor(transport), {
        token: auth.token('orders-service'),
      });
      const { messageId } = await producer.send({ topic: 'orders', body: 'broadcast' });
      const view = await eventually(
        () => opsGet(broker.endpoint, auth, `/v1/messages/${messageId}`),
        ({ body }) => JSON.stringify(body).includes('"principal"'),
      );
      expect(consumer.deliveries).toHaveLength(1);
      expect(view.body).toMatchObject({
        groups: [
          {
            group: 'billing-audit',
            instance: 'audit-1',
            history: [{ result: 'committed', principal: 'billing-worker' }],
          },
        ],
      });
    });

    // Settles with raw frames, which the test's raw client writes on WebSocket only; the check
    // itself sits in the session every transport shares.
    it.runIf(transport === 'ws')(
      "refuses to settle another group's delivery with 403, and the delivery stays as it was",
      async () => {
        using auth = new AuthFileFixture(PRINCIPALS);
        await using broker = await startSecuredBroker(auth);
        await using shipping = await TokenSocket.open(
          broker.endpointFor(transport),
          auth.token('shipping-worker'),
        );
        shipping.send({ type: 'register', id: 1, group: 'shipping', subscriptions: { orders: '*' } });
        expect(await shipping.next()).toMatchObject({ type: 'ok', id: 1 });
        await using producer = await startProducer(broker.endpointFor(transport), {
          token: auth.token('orders-service'),
        });
        const { messageId } = await producer.send({ topic: 'orders', body: 'parcel' });
        shipping.send({
          type: 'receive',
          id: 2,
          group: 'shipping',
          subscriptions: { orders: '*' },
          maxMessages: 1,
          invisibleDurationMs: 60_000,
          awaitDurationMs: 5_000,
        });
        const received = await shipping.next();
        if (received.type !== 'messages')
          throw new Error(`expected messages, got ${JSON.stringify(received)}`);
        const receiptHandle = received.messages[0]?.receiptHandle ?? '';

        await using billing = await TokenSocket.open(
          broker.endpointFor(transport),
          auth.token('billing-worker'),
        );
        billing.send({ type: 'ack', id: 3, receiptHandles: [receiptHandle] });
        expect(await billing.next()).toMatchObject({ type: 'error', id: 3, code: 403 });
        billing.send({ type: 'nack', id: 4, items: [{ receiptHandle, deadLetter: true }] });
        expect(await billing.next()).toMatchObject({ type: 'error', id: 4, code: 403 });
        billing.send({ type: 'changeInvisibleDuration', id: 5, receiptHandle, invisibleDurationMs: 10 });
        expect(await billing.next()).toMatchObject({ type: 'error', id: 5, code: 403 });
        expect((await opsGet(broker.endpoint, auth, '/v1/groups/shipping')).body).toMatchObject({
          stats: { inflight: 1, committed: 0, dlq: 0 },
        });

        // The holder's own ack goes through, with the same handle.
        shipping.send({ type: 'ack', id: 6, receiptHandles: [receiptHandle] });
        expect(await shipping.next()).toMatchObject({ type: 'settled', id: 6, failures: [] });
        const view = await opsGet(broker.endpoint, auth, `/v1/messages/${messageId}`);
        expect(view.body).toMatchObject({
          groups: [{ group: 'shipping', history: [{ principal: 'shipping-worker' }] }],
        });
      },
    );
  },
);
