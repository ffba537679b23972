import type { WebSocketConstructor } from '@ricochet/client';
import { decodeBrokerFrame } from '@ricochet/protocol';
import { ConsumeResult, type ConsumeResultValue } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startProducer, text } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';

/** A delivery as it came off the wire, before the consumer's cache. */
interface Arrival {
  readonly body: string;
  readonly deliveryAttempt: number;
}

/** The `ws` WebSocket, telling `onArrival` of every message a `deliver` frame brings, first. */
function tracingWebSocket(onArrival: (arrival: Arrival) => void): WebSocketConstructor {
  return class TracingWebSocket extends WebSocket {
    constructor(url: string, protocols: string | string[]) {
      super(url, protocols);
      // Added before the client's own handler, so it runs first for every message.
      this.addEventListener('message', (event) => {
        const decoded = decodeBrokerFrame(new Uint8Array(event.data as ArrayBuffer | Buffer));
        if (!decoded.ok || decoded.frame.type !== 'deliver') return;
        for (const message of decoded.frame.messages) {
          onArrival({ body: text(message.body), deliveryAttempt: message.deliveryAttempt });
        }
      });
    }
  };
}

describe('P3: a retry that falls due does not wait behind the first deliveries a push consumer has cached', () => {
  // The order is the client's own (its local cache), whatever the transport: traced over WebSocket.
  it('runs the redelivery before the first deliveries that were waiting in the cache when it arrived', async () => {
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
