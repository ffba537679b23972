import type { CallOptions, ClientCloseOptions, ClientOptions } from '@ricochet/client';

/** How long an empty `receive` waits for a message unless told otherwise: 20 s (S2). */
export const DEFAULT_AWAIT_DURATION_MS = 20_000;

/**
 * How long a `receive` or `ack` answered `503 BROKER_UNAVAILABLE` is retried unless told otherwise:
 * 30 s, as the producer's `sendTimeoutMs` (a handover after a crash waits out the dead owner's
 * lease, 10 s by default, before the next owner loads the queue).
 */
export const DEFAULT_UNAVAILABLE_RETRY_MS = 30_000;

/** Options of {@link SimpleConsumer}: the connection options every client takes, and its own. */
export interface SimpleConsumerOptions extends ClientOptions {
  /** The consumer group: 1–120 of `A–Z a–z 0–9 _ . -`. Required. */
  readonly group: string;
  /**
   * Topic → tag expression (`*`, or tags joined by `||`), 1 to 64 topics; a `%DLQ%<group>` topic
   * may be consumed too (D1). Required.
   */
  readonly subscriptions: Readonly<Record<string, string>>;
  /**
   * How long an empty `receive` waits for a message to arrive (long polling), 0–30 000; 0
   * answers at once. @default 20000 (ms)
   */
  readonly awaitDurationMs?: number;
  /**
   * How long after a `receive` or `ack` was first answered `503 BROKER_UNAVAILABLE` (a queue
   * between owners while a spread cluster moves it) it is still retried, in ms: after 25 ms, 50, 100,
   * … capped at 1 s (±20 %), while the next attempt can start within it; then the call fails with
   * the last `503`. An ack answered `503` was not applied, so its retry commits at most once
   * (S3). `0` turns these retries off. Other failures are never retried here.
   * @default 30000 (ms)
   */
  readonly unavailableRetryMs?: number;
  /**
   * Against brokers that spread their queues (`--store-spread`), lease each queue's messages from
   * its owner: the consumer asks for the queue map and the `ownedReceives` feature, opens a session
   * with every owner the map names once it started, asks each in turn before it waits, and settles each message on
   * the session that leased it, so that no broker relays the leases or their settles
   * (docs/protocol/README.md#owned-receives). An empty receive still waits through the `endpoint`
   * broker, over every queue. Against one broker, an older broker, or HTTP, it changes nothing.
   * `false` receives everything through the `endpoint` broker, which forwards.
   * @default true
   */
  readonly routeToOwners?: boolean;
}

/**
 * Options of the {@link SimpleConsumer} calls that take a signal.
 * @deprecated Use `CallOptions` (the same `{ signal }`), the one name of every client.
 */
export type SimpleConsumerCallOptions = CallOptions;

/** Options of {@link SimpleConsumer.close}. */
export interface SimpleConsumerCloseOptions extends ClientCloseOptions {
  /**
   * How long in-flight `ack` and `changeInvisibleDuration` calls may still be answered.
   * @default 5000 (ms)
   * @deprecated Use `timeoutMs`; when both are given, `timeoutMs` wins.
   */
  readonly drainTimeoutMs?: number;
}
