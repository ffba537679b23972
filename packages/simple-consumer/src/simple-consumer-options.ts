import type { ClientError, TlsOptions, WebSocketConstructor } from '@ricochet/client';
import type { ExponentialBackoffOptions } from '@ricochet/core';

/** How long an empty `receive` waits for a message unless told otherwise: 20 s (S2). */
export const DEFAULT_AWAIT_DURATION_MS = 20_000;

/** Options of {@link SimpleConsumer}. */
export interface SimpleConsumerOptions {
  /**
   * The broker's endpoint: `ws://host:port`, `wss://host:port`, `tcp://host:port` or
   * `tls://host:port` (Node only), `http://host:port` or `https://host:port`; or a non-empty list
   * of them, for brokers of which one serves at a time (an owner and its standbys): the
   * connection tries them in order, moving to the next after a failed connect attempt and trying
   * the same one first after a dropped session. See `ConnectionOptions.endpoint`. Required.
   */
  readonly endpoint: string | readonly string[];
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
  /** The auth token sent in `hello`. @default undefined (no token) */
  readonly token?: string;
  /** A name for this consumer in the broker's logs and delivery histories. @default undefined */
  readonly clientId?: string;
  /**
   * How long a request waits for its answer, time spent waiting for a reconnect included. A
   * `receive` waits `awaitDurationMs` longer, since the broker may hold it that long.
   * @default 30000 (ms)
   */
  readonly requestTimeoutMs?: number;
  /**
   * The reconnect backoff of the connection (C1).
   * @default {} (the seeds' values: 1 s initial, ×1.6, ±20 % jitter, 120 s max, 20 s min attempt)
   */
  readonly reconnectBackoff?: ExponentialBackoffOptions;
  /**
   * TLS settings for a `wss://` or `tls://` endpoint, e.g. `{ ca }` to trust a private authority; see
   * `ConnectionOptions.tls`. A refused certificate fails with `TLS_ERROR`. Node only.
   * @default undefined (the system's trusted CAs)
   */
  readonly tls?: TlsOptions;
  /** The WebSocket implementation for `ws(s)://`. @default globalThis.WebSocket, else the `ws` package */
  readonly webSocket?: WebSocketConstructor;
  /** See `ConnectionOptions.onProtocolError`. @default console.warn */
  readonly onProtocolError?: (error: ClientError) => void;
}

/** Options of the {@link SimpleConsumer} calls that take a signal. */
export interface SimpleConsumerCallOptions {
  /** Stops waiting: the call rejects with `ABORTED`. @default undefined */
  readonly signal?: AbortSignal;
}

/** Options of {@link SimpleConsumer.close}. */
export interface SimpleConsumerCloseOptions {
  /**
   * How long in-flight `ack` and `changeInvisibleDuration` calls may still be answered before they
   * fail with `CLIENT_CLOSED`. @default 5000 (ms)
   */
  readonly drainTimeoutMs?: number;
}
