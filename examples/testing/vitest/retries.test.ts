// Tests of a consumer's retry logic with @ricochet/testing and vitest: a real broker in the
// process, on a virtual clock, so hours of retry schedule take milliseconds.
// Run in this repository: pnpm vitest run --project testing-examples
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { SimpleConsumer } from '@ricochet/simple-consumer';
import { formatDuration, startTestBroker, type TestBroker } from '@ricochet/testing';
import { describe, expect, it } from 'vitest';

/**
 * The code under test: a consumer that charges each order through a payment gateway, and fails the
 * delivery (so the broker retries it on the group's schedule) while the gateway is down.
 */
async function startBilling(broker: TestBroker, gateway: { up: boolean }): Promise<PushConsumer> {
  const consumer = new PushConsumer({
    endpoint: broker.endpoint,
    group: 'billing',
    subscriptions: { orders: '*' },
    listener: () => (gateway.up ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE),
    onListenerError: () => {},
    // The consumption timeout runs on the test's clock too.
    clock: broker.clock,
  });
  await consumer.start(); // before any send: a new group starts at the topic's end
  return consumer;
}

describe('billing retries on the default schedule', () => {
  it('retries 16 times over 4 h 45 min 40 s, then dead-letters the order', async ({ annotate }) => {
    await using broker = await startTestBroker();
    await using billing = new PushConsumer({
      endpoint: broker.endpoint,
      group: 'billing',
      subscriptions: { orders: '*' },
      listener: () => ConsumeResult.FAILURE, // the gateway never comes back
      onListenerError: () => {},
    });
    await billing.start(); // before the send: a new group starts at the topic's end
    await using producer = new Producer({ endpoint: broker.endpoint });

    const startedAt = performance.now();
    const { messageId } = await producer.send({ topic: 'orders', body: '{"orderId":1042}' });
    await broker.clock.runUntilIdle(); // every retry, each at its virtual time, until nothing is left
    const realMs = Math.round(performance.now() - startedAt);

    const dead = await broker.expectInDlq('billing', messageId);
    expect(dead).toMatchObject({ attempts: 17, originTopic: 'orders' });
    // Every delivery, as virtual time since the send: retried at +10 s, +40 s, +1 min 40 s …
    const history = await broker.history(messageId);
    expect(history.map((delivery) => formatDuration(delivery.elapsedMs))).toEqual([
      '0s',
      '10s',
      '40s',
      '1m 40s',
      '3m 40s',
      '6m 40s',
      '10m 40s',
      '15m 40s',
      '21m 40s',
      '28m 40s',
      '36m 40s',
      '45m 40s',
      '55m 40s',
      '1h 15m 40s',
      '1h 45m 40s',
      '2h 45m 40s',
      '4h 45m 40s',
    ]);
    expect(history.at(-1)?.result).toBe('deadLettered');
    await annotate(`4 h 45 min 40 s of retries in ${realMs} ms of real time`);
  });

  it('charges the order on the first retry after the gateway is back', async () => {
    await using broker = await startTestBroker();
    const gateway = { up: false };
    await using _billing = await startBilling(broker, gateway);
    await using producer = new Producer({ endpoint: broker.endpoint });
    const { messageId } = await producer.send({ topic: 'orders', body: '{"orderId":1042}' });
    await broker.waitForDelivery({ group: 'billing', messageId, attempt: 1 });

    await broker.clock.advance('10s'); // the first retry: still down
    gateway.up = true;
    await broker.clock.advance('29s'); // the second retry is due 30 s after the failure
    expect((await broker.history(messageId)).map((delivery) => delivery.result)).toEqual([
      'failed',
      'failed',
    ]);
    await broker.clock.advance('1s');

    const charged = await broker.waitForDelivery({ group: 'billing', messageId, attempt: 3 });
    expect(charged).toMatchObject({ result: 'committed', elapsedMs: 40_000 });
    expect((await broker.admin.getGroup('billing')).stats).toMatchObject({ committed: 1, dlq: 0 });
  });

  it('gives up after the group’s own maxRetries', async () => {
    await using broker = await startTestBroker();
    await broker.admin.putGroup('billing', {
      maxRetries: 2,
      retryPolicy: { type: 'fixed', delayMs: 60_000 },
    });
    await using _billing = await startBilling(broker, { up: false });
    await using producer = new Producer({ endpoint: broker.endpoint });
    const sentAt = broker.clock.now();
    const { messageId } = await producer.send({ topic: 'orders', body: '{"orderId":1042}' });

    await broker.clock.advance('2m');
    const dead = await broker.expectInDlq('billing', messageId);
    expect(dead).toMatchObject({ attempts: 3, reason: 'the listener returned FAILURE' });
    expect(dead.deadLetteredAt - sentAt).toBe(120_000); // at the third failure, not lazily later
  });
});

describe('timeouts on the virtual clock', () => {
  it('fails a listener that runs past its consumption timeout, and retries it', async () => {
    await using broker = await startTestBroker();
    await using billing = new PushConsumer({
      endpoint: broker.endpoint,
      group: 'billing',
      subscriptions: { orders: '*' },
      consumptionTimeoutMs: 60_000,
      clock: broker.clock, // so the timeout passes when the test's clock does
      // The first delivery hangs until its signal says the consumer gave up on it.
      listener: (message, { signal }) =>
        message.deliveryAttempt === 1
          ? new Promise((resolve) => signal.addEventListener('abort', () => resolve(ConsumeResult.SUCCESS)))
          : ConsumeResult.SUCCESS,
      onListenerError: () => {},
    });
    await billing.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const { messageId } = await producer.send({ topic: 'orders', body: '{"orderId":1042}' });
    expect(await broker.waitForDelivery({ group: 'billing', messageId })).toMatchObject({
      result: 'inflight',
    });

    await broker.clock.advance('1m10s'); // the timeout at +1 min, the retry 10 s later
    expect(await broker.history(messageId)).toMatchObject([
      { attempt: 1, result: 'failed', reason: 'consumption timeout', elapsedMs: 0 },
      { attempt: 2, result: 'committed', elapsedMs: 70_000 },
    ]);
  });

  it('hands an unacked message out again when its lease ends', async () => {
    await using broker = await startTestBroker();
    await using worker = new SimpleConsumer({
      endpoint: broker.endpoint,
      group: 'workers',
      subscriptions: { orders: '*' },
    });
    await worker.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const { messageId } = await producer.send({ topic: 'orders', body: '{"orderId":1042}' });

    const [first] = await worker.receive(1, 30_000); // leased for 30 s, never acked
    expect(first?.deliveryAttempt).toBe(1);
    await broker.clock.advance('30s');
    const [again] = await worker.receive(1, 30_000);
    expect(again).toMatchObject({ messageId, deliveryAttempt: 2 });
  });
});
