import type { ReceivedMessage, WebSocketConstructor } from '@ricochet/client';
import { decodeBrokerFrame } from '@ricochet/protocol';
import { type ConsumeResultValue, PushConsumer, type PushConsumerOptions } from '@ricochet/push-consumer';
import WebSocket from 'ws';
import { FAST_BACKOFF, text } from './clients.js';

/** One delivery as a test saw it. */
export interface SeenDelivery {
  readonly message: ReceivedMessage;
  /** `performance.now()` when the listener was called. */
  readonly atMs: number;
}

/** Decides what the listener answers; may wait (return a promise) to hold a delivery. */
export type Verdict = (
  message: ReceivedMessage,
  index: number,
) => ConsumeResultValue | Promise<ConsumeResultValue>;

/**
 * A push consumer whose listener records every delivery, lets the test decide each answer, and
 * lets it await the n-th delivery as an event instead of sleeping.
 */
export class RecordingPushConsumer implements AsyncDisposable {
  readonly consumer: PushConsumer;
  readonly deliveries: SeenDelivery[] = [];
  readonly #waiters: { count: number; resolve: () => void }[] = [];

  constructor(
    endpoint: string,
    options: Omit<PushConsumerOptions, 'endpoint' | 'listener'>,
    verdict: Verdict,
  ) {
    this.consumer = new PushConsumer({
      reconnectBackoff: FAST_BACKOFF,
      // Failures are what these tests provoke; they assert on the broker's history instead.
      onListenerError: () => {},
      onError: () => {},
      ...options,
      endpoint,
      listener: (message) => {
        const index = this.deliveries.length;
        this.deliveries.push({ message, atMs: performance.now() });
        for (const waiter of this.#waiters.filter((w) => this.deliveries.length >= w.count)) {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
        return verdict(message, index);
      },
    });
  }

  start(): Promise<void> {
    return this.consumer.start();
  }

  /** Resolves once at least `count` deliveries have reached the listener. */
  delivered(count: number): Promise<SeenDelivery[]> {
    if (this.deliveries.length >= count) return Promise.resolve(this.deliveries);
    return new Promise((resolve) => this.#waiters.push({ count, resolve: () => resolve(this.deliveries) }));
  }

  close(): Promise<void> {
    return this.consumer.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.consumer.close();
  }
}

/** A started recording consumer. */
export async function startRecordingConsumer(
  endpoint: string,
  options: Omit<PushConsumerOptions, 'endpoint' | 'listener'>,
  verdict: Verdict,
): Promise<RecordingPushConsumer> {
  const consumer = new RecordingPushConsumer(endpoint, options, verdict);
  try {
    await consumer.start();
  } catch (error) {
    // The caller gets no handle to close it with: close it here, or it reconnects for ever.
    await consumer.close();
    throw error;
  }
  return consumer;
}

/**
 * Poll a condition over the admin API until it holds, for the few facts that no client event
 * announces (a state the broker reached after a result). Bounded in tries and time.
 */
export async function eventually<T>(
  read: () => Promise<T>,
  holds: (value: T) => boolean,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  let value = await read();
  for (let tries = 0; tries < 10_000 && !holds(value); tries++) {
    if (performance.now() > deadline)
      throw new Error(`condition not reached in ${timeoutMs} ms; last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
    value = await read();
  }
  return value;
}

/** Resolves once `group`'s DLQ holds `count` messages, as its stats say (awaited, not slept on). */
export function untilDeadLettered(
  admin: { getGroup(group: string): Promise<{ readonly stats: { readonly dlq: number } }> },
  group: string,
  count: number,
  timeoutMs = 5_000,
): Promise<number> {
  return eventually(
    () => admin.getGroup(group).then((view) => view.stats.dlq),
    (dlq) => dlq === count,
    timeoutMs,
  );
}

/** A delivery as it came off the wire, before the consumer's cache. */
export interface Arrival {
  readonly body: string;
  readonly deliveryAttempt: number;
}

/** The `ws` WebSocket, telling `onArrival` of every message a `deliver` frame brings, first. */
export function tracingWebSocket(onArrival: (arrival: Arrival) => void): WebSocketConstructor {
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
