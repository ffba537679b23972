import { existsSync } from 'node:fs';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, type ConsumeResultValue, PushConsumer } from '@ricochet/push-consumer';
import { SimpleConsumer } from '@ricochet/simple-consumer';
import { describe, expect, it } from 'vitest';
import { startTestBroker, type TestBroker } from './test-broker.js';
import { ExpectationError } from './testing-errors.js';

/** A push consumer of `group` on `orders` whose listener answers `verdict`; records what it saw. */
function failingConsumer(
  broker: TestBroker,
  group: string,
  verdict: (attempt: number) => ConsumeResultValue = () => ConsumeResult.FAILURE,
) {
  const seen: { attempt: number; atMs: number }[] = [];
  const consumer = new PushConsumer({
    endpoint: broker.endpoint,
    group,
    subscriptions: { orders: '*' },
    listener: (message) => {
      seen.push({ attempt: message.deliveryAttempt, atMs: broker.clock.now() });
      return verdict(message.deliveryAttempt);
    },
    onListenerError: () => {},
  });
  return { consumer, seen };
}

describe('startTestBroker', () => {
  it('listens on 127.0.0.1, and removes its data directory on close', async () => {
    const broker = await startTestBroker();
    expect(broker.endpoint).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    expect(broker.adminUrl).toBe(broker.endpoint.replace('ws://', 'http://'));
    expect(existsSync(broker.dataDir)).toBe(true);
    const health = await fetch(`${broker.adminUrl}/healthz`);
    expect(health.status).toBe(200);
    await broker.close();
    await broker.close();
    expect(existsSync(broker.dataDir)).toBe(false);
  });

  it('starts the clock where it is told, and leaves it there while idle', async () => {
    await using broker = await startTestBroker({ startAtMs: Date.UTC(2026, 0, 1) });
    expect(broker.clock.now()).toBe(Date.UTC(2026, 0, 1));
    // The broker's periodic upkeep is pending, but it is not work: nothing moves.
    await broker.clock.runUntilIdle();
    expect(broker.clock.now()).toBe(Date.UTC(2026, 0, 1));
    await broker.clock.advance('1h30m');
    expect(broker.clock.now()).toBe(Date.UTC(2026, 0, 1) + 90 * 60_000);
  });

  it('rejects a duration that is not one', async () => {
    await using broker = await startTestBroker();
    expect(() => broker.clock.advance(-1)).toThrow(RangeError);
    expect(() => broker.clock.advance('ten seconds')).toThrow(RangeError);
  });
});

describe('clock.advance', () => {
  it('redelivers a failed message at its retry time, not a millisecond early (P3)', async () => {
    await using broker = await startTestBroker();
    await broker.admin.putGroup('billing', { retryPolicy: { type: 'fixed', delayMs: 10_000 } });
    const { consumer, seen } = failingConsumer(broker, 'billing');
    await using _consumer = consumer;
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const { messageId } = await producer.send({ topic: 'orders', body: 'a' });
    await broker.waitForDelivery({ group: 'billing', messageId });

    await broker.clock.advance(9_999);
    expect(seen.map((delivery) => delivery.attempt)).toEqual([1]);
    await broker.clock.advance(1);
    // advance resolved after the delivery reached the listener, and its failure was stored.
    expect(seen.map((delivery) => delivery.attempt)).toEqual([1, 2]);
    expect((await broker.admin.getGroup('billing')).stats).toMatchObject({ waitingRetry: 1, inflight: 0 });
  });

  it('fires every retry in its span in order, each at its own time, to the DLQ (P4)', async () => {
    await using broker = await startTestBroker();
    await broker.admin.putGroup('billing', {
      maxRetries: 3,
      retryPolicy: { type: 'stepped', delaysMs: [1_000, 5_000, 60_000] },
    });
    const { consumer, seen } = failingConsumer(broker, 'billing');
    await using _consumer = consumer;
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const { messageId } = await producer.send({ topic: 'orders', body: 'a' });
    await broker.waitForDelivery({ group: 'billing', messageId });

    await broker.clock.advance('2h');
    const first = seen[0]?.atMs ?? 0;
    expect(seen.map((delivery) => delivery.atMs - first)).toEqual([0, 1_000, 6_000, 66_000]);
    const dead = await broker.expectInDlq('billing', messageId);
    expect(dead).toMatchObject({ attempts: 4, originTopic: 'orders', deadLetteredAt: first + 66_000 });
  });

  it('delivers a delay message at its time (T1)', async () => {
    await using broker = await startTestBroker();
    const { consumer, seen } = failingConsumer(broker, 'reminders', () => ConsumeResult.SUCCESS);
    await using _consumer = consumer;
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const { messageId } = await producer.send({ topic: 'orders', body: 'renew', delayMs: 3_600_000 });
    await broker.clock.advance('59m');
    expect(seen).toEqual([]);
    await broker.clock.advance('1m');
    expect(seen).toHaveLength(1);
    const [delivery] = await broker.history(messageId);
    expect(delivery).toMatchObject({ attempt: 1, result: 'committed', elapsedMs: 3_600_000 });
  });

  it("times out a push listener on the client's consumption timeout when given the clock (P2)", async () => {
    await using broker = await startTestBroker();
    let release: () => void = () => {};
    await using consumer = new PushConsumer({
      endpoint: broker.endpoint,
      group: 'slow',
      subscriptions: { orders: '*' },
      consumptionTimeoutMs: 60_000,
      clock: broker.clock,
      listener: (message) =>
        message.deliveryAttempt === 1
          ? new Promise((resolve) => (release = () => resolve(ConsumeResult.SUCCESS)))
          : ConsumeResult.SUCCESS,
      onListenerError: () => {},
    });
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const { messageId } = await producer.send({ topic: 'orders', body: 'a' });
    expect(await broker.waitForDelivery({ group: 'slow', messageId })).toMatchObject({ result: 'inflight' });

    await broker.clock.advance('1m');
    const [timedOut] = await broker.history(messageId);
    expect(timedOut).toMatchObject({ attempt: 1, result: 'failed', reason: 'consumption timeout' });
    await broker.clock.advance('10s');
    expect(await broker.waitForDelivery({ group: 'slow', messageId, attempt: 2 })).toMatchObject({
      result: 'committed',
      elapsedMs: 70_000,
    });
    release();
  });
});

describe('failure storms on the virtual clock (DESIGN.md §11)', () => {
  it("wakes an open breaker's probe when the clock reaches it, and no sooner", async () => {
    await using broker = await startTestBroker();
    await broker.admin.putGroup('billing', {
      maxRetries: 100,
      retryPolicy: { type: 'fixed', delayMs: 1_000 },
      // Trips on five failures; the first probe a minute later, far past any real-time test wait.
      pauseOnFailures: {
        failureRatio: 0.5,
        minOutcomes: 5,
        windowMs: 60_000,
        pauseMs: 60_000,
        maxPauseMs: 300_000,
      },
    });
    let healthy = false;
    const { consumer, seen } = failingConsumer(broker, 'billing', () =>
      healthy ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE,
    );
    await using _consumer = consumer;
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    for (let i = 0; i < 5; i++) await producer.send({ topic: 'orders', body: `order ${i}` });
    await broker.settle();
    expect((await broker.admin.getGroup('billing')).pause?.state).toBe('open');
    expect(seen).toHaveLength(5);

    // The retries fell due at +1 s and wait: the breaker holds them until its probe.
    await broker.clock.advance(59_999);
    expect(seen).toHaveLength(5);
    healthy = true;
    await broker.clock.advance(1);
    // The probe went at +60 s on the virtual clock, succeeded, and the rest followed.
    expect(seen.slice(5).map((delivery) => delivery.atMs - (seen[0]?.atMs ?? 0))).toEqual([
      60_000, 60_000, 60_000, 60_000, 60_000,
    ]);
    expect((await broker.admin.getGroup('billing')).pause?.state).toBe('closed');
  });
});

describe('a group delivery rate on the virtual clock (X5)', () => {
  it('hands out a burst, then one delivery per token as the clock moves', async () => {
    await using broker = await startTestBroker();
    // 10/s: a burst of 1, then one every 100 ms.
    await broker.admin.putGroup('billing', { maxDeliveriesPerSecond: 10 });
    const { consumer, seen } = failingConsumer(broker, 'billing', () => ConsumeResult.SUCCESS);
    await using _consumer = consumer;
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    for (let i = 0; i < 5; i++) await producer.send({ topic: 'orders', body: `order ${i}` });
    await broker.settle();
    expect(seen).toHaveLength(1);
    await broker.clock.advance(99);
    expect(seen).toHaveLength(1);
    await broker.clock.advance(1);
    expect(seen).toHaveLength(2);
    await broker.clock.advance('1s');
    const first = seen[0]?.atMs ?? 0;
    expect(seen.map((delivery) => delivery.atMs - first)).toEqual([0, 100, 200, 300, 400]);
  });
});

describe('simple consumers on the virtual clock (S1, S2)', () => {
  it('makes an unacked message ready again at its lease deadline, and answers a long poll then', async () => {
    await using broker = await startTestBroker();
    await using consumer = new SimpleConsumer({
      endpoint: broker.endpoint,
      group: 'workers',
      subscriptions: { orders: '*' },
    });
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const { messageId } = await producer.send({ topic: 'orders', body: 'a' });
    const [first] = await consumer.receive(1, 10_000);
    expect(first?.deliveryAttempt).toBe(1);

    // The long poll (awaitDurationMs, 20 s by default) waits on the virtual clock, and the lease
    // expires when the clock says so: at +10 s the message is ready again and the poll answers.
    const second = consumer.receive(1, 10_000);
    await broker.clock.advance('10s');
    const [again] = await second;
    expect(again).toMatchObject({ messageId, deliveryAttempt: 2 });
    if (again) await consumer.ack(again);
    expect(
      (await broker.history(messageId)).map((delivery) => [delivery.result, delivery.elapsedMs]),
    ).toEqual([
      ['leaseExpired', 0],
      ['committed', 10_000],
    ]);
  });

  it('answers an empty long poll when its awaitDurationMs has passed on the virtual clock', async () => {
    await using broker = await startTestBroker();
    await using consumer = new SimpleConsumer({
      endpoint: broker.endpoint,
      group: 'workers',
      subscriptions: { orders: '*' },
      awaitDurationMs: 5_000,
    });
    await consumer.start();
    const empty = consumer.receive(1, 10_000);
    await broker.clock.advance('5s');
    expect(await empty).toEqual([]);
  });
});

describe('assertions', () => {
  it('waitForDelivery says where the message stands when the delivery does not come', async () => {
    await using broker = await startTestBroker();
    await broker.admin.putGroup('billing', { retryPolicy: { type: 'fixed', delayMs: 10_000 } });
    const { consumer } = failingConsumer(broker, 'billing');
    await using _consumer = consumer;
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const { messageId } = await producer.send({ topic: 'orders', body: 'a' });
    const waiting = broker.waitForDelivery({ group: 'billing', messageId, attempt: 2 }, { timeoutMs: 200 });
    await expect(waiting).rejects.toThrow(ExpectationError);
    await expect(waiting).rejects.toThrow(/waitingRetry \(advance the clock to its due time\)/);
  });

  it('expectInDlq fails with the message’s standing when it is elsewhere', async () => {
    await using broker = await startTestBroker();
    const { consumer } = failingConsumer(broker, 'billing', () => ConsumeResult.SUCCESS);
    await using _consumer = consumer;
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const { messageId } = await producer.send({ topic: 'orders', body: 'a' });
    await expect(broker.expectInDlq('billing', messageId)).rejects.toThrow(
      /is not in the DLQ of group 'billing': at \+0s it is committed, after 1 ended deliveries: #1 committed at \+0s/,
    );
    await expect(broker.expectInDlq('shipping', messageId)).rejects.toThrow(/group 'shipping' does not read/);
  });

  it('dead-letters at once on ConsumeResult.deadLetter, and redrives through the admin API (D2, D3)', async () => {
    await using broker = await startTestBroker();
    const { consumer, seen } = failingConsumer(broker, 'billing', (attempt) =>
      seen.length === 1
        ? ConsumeResult.deadLetter('poison')
        : attempt === 1
          ? ConsumeResult.SUCCESS
          : ConsumeResult.FAILURE,
    );
    await using _consumer = consumer;
    await consumer.start();
    await using producer = new Producer({ endpoint: broker.endpoint });
    const { messageId } = await producer.send({ topic: 'orders', body: 'a' });
    expect(await broker.expectInDlq('billing', messageId)).toMatchObject({ attempts: 1, reason: 'poison' });
    expect(await broker.admin.redrive('billing', { messageIds: [messageId] })).toBe(1);
    await broker.settle();
    expect(seen.map((delivery) => delivery.attempt)).toEqual([1, 1]);
    expect(await broker.admin.listDlq('billing')).toEqual([]);
  });
});
