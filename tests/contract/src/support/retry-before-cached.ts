import { ConsumeResult, type ConsumeResultValue } from '@ricochet/push-consumer';
import { expect } from 'vitest';
import { startProducer, text } from './clients.js';
import { type Arrival, eventually, startRecordingConsumer, tracingWebSocket } from './push.js';
import type { TestBroker } from './test-broker.js';
import { storeQueues } from './test-store.js';

/**
 * P3 against a push consumer's cache: six messages (more, until every queue has one), the first
 * delivered failing at once and the others held by two slow listeners (a cache of 4), so its
 * retry falls due while first deliveries wait in the cache; the retry must run before every first
 * delivery cached when it arrived. On one broker; and in the spread run on three brokers, where
 * the consumer subscribes on every queue owner (`routeToOwners`, the default) and lends its credit
 * to them from one pool (docs/protocol/README.md#credit-lending): with the credit split
 * statically, the credit a finished listener frees goes back to the owner that delivered, and a
 * retry that fell due at another, whose share is spent, never arrives.
 */
export async function retryRunsBeforeCachedFirstDeliveries(broker: TestBroker): Promise<void> {
  await broker.admin.putGroup('billing', {
    startFrom: 'earliest',
    retryPolicy: { type: 'fixed', delayMs: 100 },
  });
  await using producer = await startProducer(broker.endpoint);
  // Six messages at least, and one in every queue: a queue owner with none would keep the credit
  // it was first lent, idle, and with the pool that small no first delivery would wait in the
  // cache when the retry comes: nothing to run the retry ahead of.
  const queues = storeQueues();
  const sent: { messageId: string }[] = [];
  const filled = new Set<number>();
  for (let index = 0; index < 64 && (index < 6 || filled.size < queues); index++) {
    const result = await producer.send({ topic: 'orders', body: `m${index}` });
    // A queue's offsets are interleaved: `offset × queues + queue` (store-queues.ts).
    filled.add(result.offset % queues);
    sent.push(result);
  }
  expect(filled.size).toBe(queues);

  const arrivals: Arrival[] = [];
  // Set by the socket's trace when the retry arrives.
  const atRetry: { cached?: string[] } = {};
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
      webSocket: tracingWebSocket((arrival) => {
        // The first deliveries cached when the retry arrives: read now, before the consumer takes
        // the retry in (a listener may be free already, and start one of them in the same turn).
        if (arrival.deliveryAttempt > 1 && atRetry.cached === undefined) {
          atRetry.cached = arrivals
            .map((earlier) => `${earlier.body}@1`)
            .filter((delivery) => !started.includes(delivery));
          retryArrived();
        }
        arrivals.push(arrival);
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
  const cachedAtRetry = atRetry.cached ?? [];
  expect(cachedAtRetry.length).toBeGreaterThan(0);

  holding = false;
  for (const release of holds.values()) release();
  await consumer.delivered(sent.length + 1);
  // The retry went first: before every first delivery that was waiting when it arrived.
  const retryStart = started.indexOf(`${failing}@2`);
  expect(retryStart).toBeGreaterThan(-1);
  for (const delivery of cachedAtRetry) {
    expect(started.indexOf(delivery), `${delivery} started before the retry`).toBeGreaterThan(retryStart);
  }
}
