import type { CallOptions, ClientCloseOptions, ClientOptions } from '@ricochet/client';

/** How long an empty `receive` waits for a message unless told otherwise: 20 s (S2). */
export const DEFAULT_AWAIT_DURATION_MS = 20_000;

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
