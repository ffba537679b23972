import type { ExponentialBackoffOptions } from '@ricochet/core';
import { badRequestError, type ClientError } from './client-error.js';
import type { TlsOptions } from './tls-options.js';
import type { WebSocketConstructor } from './web-socket.js';

/** How long a request may wait for its answer unless it says otherwise: 30 s. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** How long a client's first connect may take unless told otherwise: 10 s. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

/** How long `close()` lets in-flight requests finish unless told otherwise: 5 s. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 5_000;

/**
 * The connection options every client takes: the producer's, the push consumer's and the simple
 * consumer's options extend these, and {@link Connection} takes them too.
 */
export interface ClientOptions {
  /**
   * The broker's endpoint, or a non-empty list of them; each one's scheme picks its transport
   * (docs/protocol/transports.md): `ws://host:port` or `wss://host:port` for WebSocket (a path
   * prefix is kept, for brokers behind a proxy; the connection opens `endpoint` + `/v1/ws`),
   * `tcp://host:port` or `tls://host:port` for the broker's TCP listener (Node only),
   * `http://host:port` or `https://host:port` for request/response (producer and simple consumer
   * only: a push consumer needs a stream and refuses them, in a list too).
   *
   * A list names brokers of which one serves at a time, such as an owner and its standbys; the
   * schemes may differ. Each connect attempt goes to one endpoint, starting with the first: a
   * failed attempt moves on to the next (after the last, the first again), each after the
   * reconnect backoff's wait (C1), and when a session drops the first attempt goes to the same
   * endpoint again. An empty list, or any entry that is not a URL of a known scheme, is refused
   * with `400`. Required.
   */
  readonly endpoint: string | readonly string[];
  /** The auth token sent in `hello` (DESIGN.md §7). @default undefined (no token) */
  readonly token?: string;
  /**
   * A name for this client in the broker's logs and delivery histories. Required to consume a
   * `broadcasting` group (B1), where it names the instance: keep it stable across reconnects and
   * restarts, and the instance resumes where it stopped. @default undefined
   */
  readonly clientId?: string;
  /**
   * How long a request waits for its answer, counted from the call: time spent queued while
   * reconnecting counts too. A producer retries an attempt that timed out; a simple consumer's
   * `receive` waits `awaitDurationMs` longer, since the broker may hold it that long.
   * @default 30000 (ms)
   */
  readonly requestTimeoutMs?: number;
  /**
   * How long `start()` keeps trying to open the first session, over every endpoint of a list, before
   * it fails with `CONNECT_TIMEOUT` (a message naming the endpoints and the last attempt's error) and
   * the client closes: a broker that is not there is reported, not waited for in silence. Only the
   * first connect: once a session has opened, reconnects follow `reconnectBackoff` for as long as it
   * takes (C1). `Infinity` waits for ever (stop it with `start({ signal })` or `close()`).
   * @default 10000 (ms)
   */
  readonly connectTimeoutMs?: number;
  /**
   * The reconnect backoff (rule C1); a push consumer also waits it out between attempts to
   * subscribe again after a reconnect. Each connect attempt may take `attemptTimeoutMs()` of it,
   * at least `minConnectTimeoutMs`. Tests pass small values and a fake `clock`/`random`.
   * @default {} (the seeds' values: 1 s initial, ×1.6, ±20 % jitter, 120 s max, 20 s min attempt)
   */
  readonly reconnectBackoff?: ExponentialBackoffOptions;
  /**
   * TLS settings for a `wss://` or `tls://` endpoint, e.g. `{ ca }` to trust a private certificate
   * authority. Node only: with it a `wss://` connection opens its sockets with the `ws` package,
   * since a standard WebSocket takes no TLS settings. A certificate the client refuses ends the connection with
   * `TLS_ERROR` (not retried). Cannot be combined with `webSocket`.
   * @default undefined (the runtime's defaults: the system's trusted CAs)
   */
  readonly tls?: TlsOptions;
  /**
   * The WebSocket implementation for `ws://`/`wss://` endpoints, for tests or unusual runtimes.
   * @default globalThis.WebSocket when the runtime has one, else the `ws` package
   */
  readonly webSocket?: WebSocketConstructor;
  /**
   * Called with a `PROTOCOL_ERROR` {@link ClientError} when the broker sends something this
   * client cannot use (an undecodable frame, a text message, an unexpected frame). The frame is
   * ignored, and the request it names, if any, fails; the connection carries on.
   * @default console.warn
   */
  readonly onProtocolError?: (error: ClientError) => void;
}

/** Options of a call that may wait: `start()`, `send`, `receive`, `ack` and the others. */
export interface CallOptions {
  /** Stops waiting: the call rejects with `ABORTED`. @default undefined (waits until done) */
  readonly signal?: AbortSignal;
}

/** Options of a client's `close()`. */
export interface ClientCloseOptions {
  /**
   * How long `close()` lets what is under way finish: a producer's pending sends, a simple
   * consumer's `ack` and `changeInvisibleDuration` calls, a push consumer's running listeners.
   * What is still unfinished then fails with `CLIENT_CLOSED` (a push consumer's listeners are left
   * behind, C2). @default 5000 (ms) for a producer and a simple consumer; for a push consumer its
   * `closeTimeoutMs` option, 10000 (ms) when unset
   */
  readonly timeoutMs?: number;
}

/** Options of {@link Connection}: a client's, and two only the clients themselves set. */
export interface ConnectionOptions extends ClientOptions {
  /**
   * Refuse an endpoint whose links are not streams (request/response HTTP), every entry of a
   * list: a push consumer needs the broker to send `deliver` frames unasked. @default false
   */
  readonly requireStream?: boolean;
  /**
   * Called when a frame listener or a reconnect hook throws or rejects. The error goes no further.
   * @default console.error
   */
  readonly onHandlerError?: (error: unknown) => void;
  /**
   * Optional features this client asks for in `hello.features` (`queueMap`: a producer that
   * routes to queue owners); what the broker grants is in the session's `features`.
   * @default [] (none: the `hello` of clients that predate features)
   */
  readonly features?: readonly string[];
}

/** Options of {@link Connection.request}. */
export interface RequestOptions extends CallOptions {
  /** Overrides the connection's `requestTimeoutMs` for this request. @default requestTimeoutMs */
  readonly timeoutMs?: number;
}

/** Options of {@link Connection.close}. */
export interface CloseOptions {
  /**
   * How long in-flight requests may still be answered before they fail with `CLIENT_CLOSED`.
   * @default 5000 (ms)
   */
  readonly drainTimeoutMs?: number;
}

/**
 * Check a timeout option or argument: any positive number of ms.
 * @throws ClientError `400` naming `name`.
 */
export function checkTimeoutMs(value: number, name: string): void {
  if (!(Number.isFinite(value) && value > 0)) {
    throw badRequestError(`${name} must be a positive number, got ${value}`);
  }
}

/**
 * The entries of an `endpoint` option, in order: the one endpoint a string names, or a list's.
 * Each entry is checked when its transport is picked (`transportFor`).
 * @throws ClientError `400` for an empty list.
 */
export function endpointsOf(endpoint: string | readonly string[]): readonly string[] {
  // `Array.isArray` alone narrows to a mutable `any[]`, which leaves a readonly list unnarrowed.
  const endpoints: readonly string[] = isList(endpoint) ? [...endpoint] : [endpoint];
  if (endpoints.length === 0) {
    throw badRequestError('endpoint is an empty list: give at least one broker endpoint');
  }
  return endpoints;
}

function isList(endpoint: string | readonly string[]): endpoint is readonly string[] {
  return Array.isArray(endpoint);
}

/**
 * The options of a client's connection: its own connection options, and the `requestTimeoutMs`
 * the client settles on (it may differ from the client option, as a simple consumer's does).
 */
export function connectionOptionsOf(options: ClientOptions, requestTimeoutMs: number): ConnectionOptions {
  const { endpoint, token, clientId, connectTimeoutMs, reconnectBackoff, webSocket, onProtocolError, tls } =
    options;
  return {
    endpoint,
    requestTimeoutMs,
    ...(connectTimeoutMs === undefined ? {} : { connectTimeoutMs }),
    ...(token === undefined ? {} : { token }),
    ...(clientId === undefined ? {} : { clientId }),
    ...(reconnectBackoff === undefined ? {} : { reconnectBackoff }),
    ...(webSocket === undefined ? {} : { webSocket }),
    ...(onProtocolError === undefined ? {} : { onProtocolError }),
    ...(tls === undefined ? {} : { tls }),
  };
}
