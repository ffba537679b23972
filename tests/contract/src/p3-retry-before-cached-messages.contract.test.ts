import { ConsumeResult, type ConsumeResultValue } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer, text } from './support/clients.js';
import { type Arrival, eventually, startRecordingConsumer, tracingWebSocket } from './support/push.js';
import { retryRunsBeforeCachedFirstDeliveries } from './support/retry-before-cached.js';
import { startBroker } from './support/test-broker.js';

describe('P3: a retry that falls due does not wait behind the first deliveries a push consumer has cached', () => {
  // The order is the client's own (its local cache), whatever the transport: traced over WebSocket.
  it('runs the redelivery before the first deliveries that were waiting in the cache when it arrived', async () => {
    await using broker = await startBroker();
    await retryRunsBeforeCachedFirstDeliveries(broker);
  });
});

describe('P3 with a large maxCachedMessages: a slow consumer does not fill its cache with first deliveries', () => {
  // The credit window (docs/semantics.md, P1) starts at twice `concurrency` and grows only while
  // the listeners wait for the broker: with slow listeners the broker never has hundreds of first
  // deliveries out, so a retry that falls due is delivered after a handful, not after all of them.
  it('delivers a retry that falls due before the first deliveries still available at the broker', async () => {
    const concurrency = 2;
    const available = 200;
    await using broker = await startBroker();
    await broker.admin.putGroup('ledger', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: 50 },
    });
    await using producer = await startProducer(broker.endpoint);
    const sent = await Promise.all(
      Array.from({ length: available }, (_, index) => producer.send({ topic: 'entries', body: `e${index}` })),
    );

    const arrivals: Arrival[] = [];
    let retryArrived: () => void = () => {};
    const retryArrival = new Promise<void>((resolve) => (retryArrived = resolve));
    const holds: (() => void)[] = [];
    let holding = true;
    let failing: string | undefined;
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      {
        group: 'ledger',
        subscriptions: { entries: '*' },
        concurrency,
        maxCachedMessages: 1_000,
        webSocket: tracingWebSocket((arrival) => {
          arrivals.push(arrival);
          if (arrival.deliveryAttempt > 1) retryArrived();
        }),
      },
      (message) => {
        if (message.deliveryAttempt > 1) return ConsumeResult.SUCCESS;
        const body = text(message.body);
        failing ??= body;
        if (body === failing) return ConsumeResult.FAILURE;
        if (!holding) return ConsumeResult.SUCCESS;
        return new Promise<ConsumeResultValue>((resolve) => holds.push(() => resolve(ConsumeResult.SUCCESS)));
      },
    );
    // The first message failed; both listeners hold a first delivery.
    await consumer.delivered(1 + concurrency);
    const failedId = sent[Number(failing?.slice(1))]?.messageId ?? '';
    await eventually(
      () => broker.admin.getMessage(failedId),
      ({ groups: [view] }) =>
        view?.state === 'ready' || (view?.state === 'inflight' && view.deliveryAttempt === 2),
    );
    // One listener finishes: the credit its result gives back brings the retry.
    holds.shift()?.();
    await retryArrival;
    const firstsBeforeRetry = arrivals.findIndex((arrival) => arrival.deliveryAttempt > 1);
    // The initial window (2 × concurrency) and the one credit the failure gave back: not the
    // 1 000 that maxCachedMessages allows, which would have brought all 200 messages at once.
    expect(firstsBeforeRetry).toBeGreaterThan(0);
    expect(firstsBeforeRetry).toBeLessThanOrEqual(2 * concurrency + 1);

    holding = false;
    for (const release of holds.splice(0)) release();
    // Every message once, and the failed one twice.
    await consumer.delivered(available + 1);
  });
});
