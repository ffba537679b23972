// Tests of a consumer's retry logic with @ricochet/testing and Node's built-in test runner: a real
// broker in the process, on a virtual clock, so hours of retry schedule take milliseconds.
// Plain JavaScript for Node.js >= 20.19, so no `await using` here. Run: node --test
// (in this repository: pnpm --filter @ricochet/testing-examples test:node)
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { SimpleConsumer } from '@ricochet/simple-consumer';
import { formatDuration, startTestBroker } from '@ricochet/testing';

test('a failing order is retried 16 times over 4 h 45 min 40 s, then dead-lettered', async (t) => {
  const broker = await startTestBroker();
  const billing = new PushConsumer({
    endpoint: broker.endpoint,
    group: 'billing',
    subscriptions: { orders: '*' },
    listener: () => ConsumeResult.FAILURE, // the payment gateway never comes back
    onListenerError: () => {},
  });
  const producer = new Producer({ endpoint: broker.endpoint });
  try {
    await billing.start(); // before the send: a new group starts at the topic's end

    const startedAt = performance.now();
    const { messageId } = await producer.send({ topic: 'orders', body: '{"orderId":1042}' });
    await broker.clock.runUntilIdle(); // every retry, each at its virtual time, until nothing is left
    const realMs = Math.round(performance.now() - startedAt);

    const dead = await broker.expectInDlq('billing', messageId);
    assert.equal(dead.attempts, 17);
    // Every delivery, as virtual time since the send: retried at +10 s, +40 s, +1 min 40 s …
    const history = await broker.history(messageId);
    assert.deepEqual(
      history.map((delivery) => formatDuration(delivery.elapsedMs)),
      ['0s', '10s', '40s', '1m 40s', '3m 40s', '6m 40s', '10m 40s', '15m 40s', '21m 40s', '28m 40s'].concat([
        '36m 40s',
        '45m 40s',
        '55m 40s',
        '1h 15m 40s',
        '1h 45m 40s',
        '2h 45m 40s',
        '4h 45m 40s',
      ]),
    );
    assert.equal(history.at(-1)?.result, 'deadLettered');
    t.diagnostic(`4 h 45 min 40 s of retries in ${realMs} ms of real time`);
  } finally {
    // Clients first, then the broker (which also removes its temporary data directory).
    await producer.close();
    await billing.close();
    await broker.close();
  }
});

test('a retry comes at its exact virtual time, not a millisecond early', async () => {
  const broker = await startTestBroker();
  const attempts = [];
  const billing = new PushConsumer({
    endpoint: broker.endpoint,
    group: 'billing',
    subscriptions: { orders: '*' },
    listener: (message) => {
      attempts.push(message.deliveryAttempt);
      return message.deliveryAttempt === 1 ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
    },
    onListenerError: () => {},
  });
  const producer = new Producer({ endpoint: broker.endpoint });
  try {
    await billing.start();
    const { messageId } = await producer.send({ topic: 'orders', body: '{"orderId":1042}' });
    await broker.waitForDelivery({ group: 'billing', messageId, attempt: 1 });

    await broker.clock.advance(9_999);
    assert.deepEqual(attempts, [1]);
    await broker.clock.advance(1); // resolves once the retry has reached the listener
    assert.deepEqual(attempts, [1, 2]);
    const retry = await broker.waitForDelivery({ group: 'billing', messageId, attempt: 2 });
    assert.equal(retry.result, 'committed');
    assert.equal(retry.elapsedMs, 10_000);
  } finally {
    await producer.close();
    await billing.close();
    await broker.close();
  }
});

test('an unacked message is handed out again when its lease ends', async () => {
  const broker = await startTestBroker();
  const worker = new SimpleConsumer({
    endpoint: broker.endpoint,
    group: 'workers',
    subscriptions: { orders: '*' },
  });
  const producer = new Producer({ endpoint: broker.endpoint });
  try {
    await worker.start();
    const { messageId } = await producer.send({ topic: 'orders', body: '{"orderId":1042}' });
    const [first] = await worker.receive(1, 30_000); // leased for 30 s, never acked
    assert.equal(first?.deliveryAttempt, 1);

    await broker.clock.advance('30s');
    const [again] = await worker.receive(1, 30_000);
    assert.equal(again?.messageId, messageId);
    assert.equal(again?.deliveryAttempt, 2);
    await worker.ack(again);
  } finally {
    await producer.close();
    await worker.close();
    await broker.close();
  }
});
