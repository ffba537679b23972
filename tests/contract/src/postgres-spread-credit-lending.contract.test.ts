import { ConsumeResult, type ConsumeResultValue } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, text } from './support/clients.js';
import { type Arrival, eventually, startRecordingConsumer, tracingWebSocket } from './support/push.js';
import { startBroker } from './support/test-broker.js';

/**
 * docs/protocol/README.md#credit-lending, on three brokers spreading a PostgreSQL store's four
 * queues: P3's "a retry that falls due is delivered before later first deliveries" holds across
 * the owners a push consumer subscribes on (`routeToOwners`), as it holds within one broker
 * (`p3-retry-before-cached-messages`).
 */
describe('P3 across queue owners: a consumer subscribed on every owner lends its credit, retries first', () => {
  // With maxCachedMessages split statically over the owners, the credit a finished listener
  // frees goes back to the owner that delivered it: a retry that fell due at another owner, whose
  // share is spent, waits behind it, and (the listeners holding their first deliveries until the
  // retry comes) never arrives. Lent from one pool, the credit goes to the owner that said a retry waits.
  it('runs a retry that fell due at one owner before the first deliveries cached from the others', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: 100 },
    });
    await using producer = await startProducer(broker.endpoint);
    const sent: { messageId: string }[] = [];
    for (let index = 0; index < 6; index++)
      sent.push(await producer.send({ topic: 'orders', body: `m${index}` }));

    const arrivals: Arrival[] = [];
    let retryArrived: () => void = () => {};
    const retryArrival = new Promise<void>((resolve) => (retryArrived = resolve));
    // Listeners hold their first deliveries (but m0's, which fails at once) until the test lets go.
    const holds = new Map<string, () => void>();
    let holding = true;
    const started: string[] = [];
    // The first message delivered fails at once (m0 with one queue; with queues, whichever comes first).
    let failing: string | undefined;
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      {
        group: 'billing',
        subscriptions: { orders: '*' },
        // Two slow listeners, and a cache of 4: two running, two waiting, the broker out of credit.
        concurrency: 2,
        maxCachedMessages: 4,
        routeToOwners: true,
        webSocket: tracingWebSocket((arrival) => {
          arrivals.push(arrival);
          if (arrival.deliveryAttempt > 1) retryArrived();
        }),
      },
      (message) => {
        const body = text(message.body);
        started.push(`${body}@${message.deliveryAttempt}`);
        if (message.deliveryAttempt > 1) return ConsumeResult.SUCCESS;
        failing ??= body;
        if (body === failing) return ConsumeResult.FAILURE;
        if (!holding) return ConsumeResult.SUCCESS;
        return new Promise<ConsumeResultValue>((resolve) =>
          holds.set(body, () => resolve(ConsumeResult.SUCCESS)),
        );
      },
    );
    await consumer.delivered(3);
    // m0's retry is Ready again at the broker, behind a full window: m1 and m2 running, m3 and m4
    // (or the retry itself, if it fell due first) cached.
    await eventually(
      () => broker.admin.getMessage(sent[Number(failing?.slice(1))]?.messageId ?? ''),
      ({ groups: [view] }) =>
        view?.state === 'ready' || (view?.state === 'inflight' && view.deliveryAttempt === 2),
    );
    // One listener finishes: its credit brings the retry, the broker's first choice.
    [...holds.values()][0]?.();
    await retryArrival;
    const retryIndex = arrivals.findIndex((arrival) => arrival.deliveryAttempt > 1);
    const cachedAtRetry = arrivals
      .slice(0, retryIndex)
      .map((arrival) => `${arrival.body}@1`)
      .filter((delivery) => !started.includes(delivery));
    expect(cachedAtRetry.length).toBeGreaterThan(0);

    holding = false;
    for (const release of holds.values()) release();
    await consumer.delivered(7);
    // The retry went first: before every first delivery that was waiting when it arrived.
    const retryStart = started.indexOf(`${failing}@2`);
    expect(retryStart).toBeGreaterThan(-1);
    for (const delivery of cachedAtRetry) {
      expect(started.indexOf(delivery), `${delivery} started before the retry`).toBeGreaterThan(retryStart);
    }
  });
});
