import { ExponentialBackoff } from '@ricochet/core';
import {
  type ClientFrame,
  type ClientRequestFrame,
  encodeFrame,
  type HelloFrame,
  PROTOCOL_VERSION,
  type RicochetError,
  type WelcomeFrame,
} from '@ricochet/protocol';
import { abortedError, badRequestError, ClientError, untilAborted } from './client-error.js';
import {
  type CloseOptions,
  type ConnectionOptions,
  checkTimeoutMs,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  endpointsOf,
  type RequestOptions,
} from './connection-options.js';
import { type ConnectionStatus, StatusFeed } from './connection-status.js';
import { drainWithTimeout } from './drain-with-timeout.js';
import { EndpointRotation } from './endpoint-rotation.js';
import { connectTimeoutError, withinConnectTimeout } from './first-connect.js';
import { FrameRouter, type UnsolicitedFrames, type UnsolicitedFrameType } from './frame-router.js';
import { handshake, type SessionInfo, sessionInfoOf } from './handshake.js';
import { ReconnectLoop } from './reconnect-loop.js';
import { type AnswerFrame, type RequestFrameInput, RequestTable } from './request-table.js';
import type { FrameLink, LinkCloseEvent, Transport } from './transport.js';
import { transportFor } from './transports.js';
import { describeCloseReason } from './web-socket.js';

/**
 * How long `close()` waits for the link's closing handshake before it stops waiting. The link is
 * closed either way; this only bounds how long `close()` itself takes.
 */
const CLOSE_HANDSHAKE_TIMEOUT_MS = 1_000;

/** The close code for a normal closure (RFC 6455), on every transport. */
const NORMAL_CLOSURE = 1000;

/** The close code of a link that received a message larger than it reads (RFC 6455's "message too big"). */
const MESSAGE_TOO_BIG = 1009;

/** A client frame that carries no `id` and gets no answer, such as `credit`. */
export type OneWayFrame = Exclude<ClientFrame, ClientRequestFrame | HelloFrame>;

type ReconnectedHandler = () => void | Promise<void>;

/** One entry of the `endpoint` option, with the transport its scheme picked. */
interface Endpoint {
  readonly endpoint: string;
  readonly transport: Transport;
}

/**
 * The one connection to a broker that every Ricochet client builds on: the handshake,
 * request/answer correlation by `id`, per-request timeouts, listeners for unsolicited frames, and
 * the reconnect loop of rule C1 (written once, here).
 *
 * Requests made while no session is open wait in an outgoing queue, apart from the in-flight
 * table, and are written once a session opens; both are bounded by the request's timeout. When a
 * session drops, every in-flight request fails with the retryable `CONNECTION_CLOSED` and the
 * connection reconnects with exponential backoff; `onReconnected` hooks then run (consumers
 * resubscribe there).
 *
 * The parts live beside it: `RequestTable` (the queue and the in-flight table), `handshake` (one
 * connect attempt), `ReconnectLoop` (C1's attempts and backoff), `FrameRouter` (a session's
 * frames to their request or listeners); this class owns the link, the status and the closing.
 * The link itself comes from the {@link Transport} the endpoint's scheme picks (`transports.ts`):
 * everything here is the same on every transport. With several endpoints, `EndpointRotation`
 * picks the one each attempt goes to: the next after a failed attempt, the same after a drop.
 *
 * @example
 * await using connection = new Connection({ endpoint: 'ws://127.0.0.1:7720' });
 * await connection.connect();
 * const result = await connection.request({ type: 'send', messages });
 * @see DESIGN.md §3 C1, docs/protocol/README.md (session lifecycle, correlation)
 */
export class Connection {
  readonly #endpoints: EndpointRotation<Endpoint>;
  /** The `endpoint` option's entries, in order, for messages. */
  readonly #endpointNames: readonly string[];
  readonly #hello: HelloFrame;
  readonly #requestTimeoutMs: number;
  readonly #connectTimeoutMs: number;
  readonly #onHandlerError: (error: unknown) => void;
  readonly #onProtocolError: (error: ClientError) => void;
  /** Aborted by `close()`: every wait of the reconnect loop and every connect attempt stops. */
  readonly #lifetime = new AbortController();
  readonly #statusFeed = new StatusFeed();
  readonly #requests = new RequestTable();
  readonly #router: FrameRouter;
  readonly #reconnectLoop: ReconnectLoop;
  readonly #reconnectedHandlers = new Set<ReconnectedHandler>();
  #status: ConnectionStatus = { state: 'disconnected' };
  #link: FrameLink | undefined;
  #session: SessionInfo | undefined;
  #sessionsOpened = 0;
  /** The first connect, bounded by `connectTimeoutMs`: every `connect()` before a session opens shares it. */
  #firstConnect: Promise<void> | undefined;
  /** Set once the connection can never carry a request again: by `close()` or a fatal handshake. */
  #closedError: RicochetError | undefined;
  #closing: Promise<void> | undefined;

  /**
   * @throws ClientError `400` when `endpoint` is an empty list or it (or an entry of it) is not a
   *   URL of a known scheme, when `requireStream` is set and an endpoint's links are not streams,
   *   or an option is out of range.
   */
  constructor(options: ConnectionOptions) {
    const choice = { webSocket: options.webSocket, tls: options.tls };
    const endpoints = endpointsOf(options.endpoint).map((endpoint): Endpoint => {
      const transport = transportFor(endpoint, choice);
      if (options.requireStream === true && !transport.stream) {
        throw badRequestError(
          `endpoint '${endpoint}' is request/response; this client needs a stream: ws://, wss://, tcp:// or tls://`,
        );
      }
      return { endpoint, transport };
    });
    this.#endpoints = new EndpointRotation(endpoints);
    this.#endpointNames = endpoints.map((entry) => entry.endpoint);
    this.#hello = {
      type: 'hello',
      protocolVersion: PROTOCOL_VERSION,
      ...(options.token === undefined ? {} : { token: options.token }),
      ...(options.clientId === undefined ? {} : { clientId: options.clientId }),
      ...(options.features === undefined || options.features.length === 0
        ? {}
        : { features: [...options.features] }),
    };
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    checkTimeoutMs(this.#requestTimeoutMs, 'requestTimeoutMs');
    this.#connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    // Infinity is allowed here (wait for ever), unlike a request's timeout.
    if (this.#connectTimeoutMs !== Number.POSITIVE_INFINITY) {
      checkTimeoutMs(this.#connectTimeoutMs, 'connectTimeoutMs');
    }
    this.#onHandlerError = options.onHandlerError ?? ((error) => console.error(error));
    this.#onProtocolError = options.onProtocolError ?? ((error) => console.warn(error));
    this.#router = new FrameRouter({
      requests: this.#requests,
      onProtocolError: this.#onProtocolError,
      onHandlerError: this.#onHandlerError,
    });
    this.#reconnectLoop = new ReconnectLoop({
      backoff: new ExponentialBackoff(options.reconnectBackoff),
      signal: this.#lifetime.signal,
      attempt: (timeoutMs, signal) => this.#openSession(timeoutMs, signal),
      onStatus: (status) => this.#setStatus(status),
      onFatal: (error) => this.#closeWith(error),
    });
  }

  /** The current status; see {@link status} for the changes. */
  get currentStatus(): ConnectionStatus {
    return this.#status;
  }

  /**
   * The current session, or the last one while reconnecting: the endpoint it runs on and what the
   * broker announced in its `welcome`; `undefined` before the first session.
   */
  get session(): SessionInfo | undefined {
    return this.#session;
  }

  /**
   * Open the first session. Failed attempts are retried with the reconnect backoff until one
   * succeeds, the broker refuses the handshake with a non-retryable code (then the connection
   * closes with that error), `connectTimeoutMs` passes (then it closes with `CONNECT_TIMEOUT`), or
   * `close()` is called. Concurrent calls share one attempt loop. Once a session has opened, a
   * call while reconnecting joins the reconnect loop, with no time limit.
   *
   * @param options.signal - stops waiting (rejects with `ABORTED`); the loop itself keeps going
   *   until `close()` or `connectTimeoutMs`, so a caller that gives up should close the connection.
   * @throws BrokerError with the broker's code, e.g. `401`, when the handshake is refused.
   * @throws ClientError `CONNECT_TIMEOUT` when no session opened within `connectTimeoutMs`,
   *   `CLIENT_CLOSED` after `close()`, `ABORTED` when `signal` fires, `PROTOCOL_ERROR` when the
   *   broker does not speak `ricochet.v1`.
   */
  async connect(options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    if (this.#closedError !== undefined) throw this.#closedError;
    if (this.#status.state === 'connected') return;
    const loop = this.#reconnectLoop.run(undefined);
    if (this.#sessionsOpened > 0) return untilAborted(loop, options.signal, 'connect');
    // Only the first connect is bounded; every call before a session opens shares its deadline.
    this.#firstConnect ??= withinConnectTimeout(loop, this.#connectTimeoutMs, () => {
      const error = connectTimeoutError(
        this.#endpointNames,
        this.#connectTimeoutMs,
        lastErrorOf(this.#status),
      );
      this.#closedError ??= error;
      this.#lifetime.abort(error);
      this.#closeWith(error);
      return error;
    });
    await untilAborted(this.#firstConnect, options.signal, 'connect');
  }

  /**
   * Send a request and resolve with its answer, the broker frame carrying the same `id`.
   *
   * @throws BrokerError when the broker answers with an `error` frame; `code` is the broker's.
   * @throws ClientError `TIMEOUT` (retryable) after `timeoutMs`; `CONNECTION_CLOSED` (retryable)
   *   when the session drops first; `ABORTED` when `signal` fires; `CLIENT_CLOSED` after `close()`;
   *   `PROTOCOL_ERROR` when the answer is not the expected frame; `400` for a `timeoutMs` that is
   *   not a positive number.
   */
  request<TFrame extends RequestFrameInput>(
    frame: TFrame,
    options: RequestOptions = {},
  ): Promise<AnswerFrame<TFrame['type']>> {
    if (this.#closedError !== undefined) return Promise.reject(this.#closedError);
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(abortedError(signal, `the ${frame.type} request`));
    const timeoutMs = options.timeoutMs ?? this.#requestTimeoutMs;
    try {
      checkTimeoutMs(timeoutMs, 'timeoutMs');
    } catch (error) {
      return Promise.reject(error);
    }
    // The table resolves with the frame of the type ANSWER_TYPES names for this request.
    return this.#requests.add(frame, timeoutMs, signal, this.#link) as Promise<AnswerFrame<TFrame['type']>>;
  }

  /**
   * Send a frame that gets no answer, such as `credit`. Such frames belong to the session they
   * were sent on, so nothing is queued: without a session the frame is dropped.
   * @returns whether the frame was written to a session.
   */
  sendOneWay(frame: OneWayFrame): boolean {
    const link = this.#link;
    if (link === undefined) return false;
    link.send(encodeFrame(frame));
    return true;
  }

  /**
   * Listen for unsolicited broker frames of one type: `deliver`, or `error` frames without `id`
   * (connection-level problems such as a broker shutting down).
   * @returns a function that removes the listener.
   */
  onFrame<TType extends UnsolicitedFrameType>(
    type: TType,
    handler: (frame: UnsolicitedFrames[TType]) => void,
  ): () => void {
    return this.#router.onFrame(type, handler);
  }

  /**
   * Run `handler` each time a session opens after a dropped one (not after the first `connect`),
   * once queued requests have been written. Consumers resubscribe here (C1).
   * @returns a function that removes the hook.
   */
  onReconnected(handler: () => void | Promise<void>): () => void {
    this.#reconnectedHandlers.add(handler);
    return () => {
      this.#reconnectedHandlers.delete(handler);
    };
  }

  /** Every status change from now on, ending after `closed`. */
  status(): AsyncIterable<ConnectionStatus> {
    return this.#statusFeed.watch();
  }

  /**
   * Close for good: stop reconnecting at once, fail queued requests with `CLIENT_CLOSED`, let
   * in-flight requests be answered for up to `drainTimeoutMs` (then fail them with
   * `CLIENT_CLOSED`), and close the link with code 1000. Idempotent: later calls return the
   * first call's promise.
   */
  close(options: CloseOptions = {}): Promise<void> {
    this.#closing ??= this.#shutdown(options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS);
    return this.#closing;
  }

  /** Same as {@link close} with its defaults, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #shutdown(drainTimeoutMs: number): Promise<void> {
    const closedError = new ClientError('CLIENT_CLOSED', 'the connection was closed by its owner');
    this.#closedError ??= closedError;
    this.#lifetime.abort(closedError);
    this.#requests.failAllQueued(closedError);
    if (this.#requests.inflightCount > 0) {
      await drainWithTimeout(this.#requests.whenDrained(), drainTimeoutMs);
    }
    this.#requests.failAllInflight(closedError);
    const link = this.#link;
    this.#link = undefined;
    if (link !== undefined) await link.close(NORMAL_CLOSURE, 'client closed', CLOSE_HANDSHAKE_TIMEOUT_MS);
    // A fatal handshake error may have closed the connection already, with that error.
    if (this.#status.state !== 'closed') this.#setStatus({ state: 'closed' });
  }

  /**
   * One connect attempt of the reconnect loop, to the current endpoint. A failed one moves the
   * rotation on, so the loop's next attempt, after its backoff wait, goes to the next endpoint.
   * A fatal failure (such as `401`) moves it too, harmlessly: the loop ends with it.
   */
  async #openSession(timeoutMs: number, signal: AbortSignal): Promise<void> {
    const { endpoint, transport } = this.#endpoints.current;
    try {
      await handshake({
        transport,
        hello:
          transport.maxFrameBytes === undefined
            ? this.#hello
            : { ...this.#hello, maxFrameBytes: transport.maxFrameBytes },
        timeoutMs,
        signal,
        onWelcome: (link, welcome) => this.#adopt(link, welcome, endpoint),
      });
    } catch (error) {
      this.#endpoints.attemptFailed();
      throw error;
    }
  }

  /** Make `link` the session: route its frames, write the queued requests, run the hooks. */
  #adopt(link: FrameLink, welcome: WelcomeFrame, endpoint: string): void {
    this.#session = sessionInfoOf(welcome, endpoint);
    this.#link = link;
    this.#sessionsOpened += 1;
    link.listen({
      onFrame: (bytes) => this.#router.route(bytes),
      onUnreadable: (description) => this.#router.unreadable(description),
      onClose: (event) => this.#onLinkClose(link, event),
    });
    this.#setStatus({ state: 'connected', sessionId: welcome.sessionId, endpoint });
    this.#requests.writeQueued(link);
    if (this.#sessionsOpened > 1) {
      for (const handler of this.#reconnectedHandlers) this.#runHandler(handler);
    }
  }

  #runHandler(handler: ReconnectedHandler): void {
    try {
      const result = handler();
      if (result instanceof Promise) result.catch((error: unknown) => this.#onHandlerError(error));
    } catch (error) {
      this.#onHandlerError(error);
    }
  }

  #onLinkClose(link: FrameLink, event: LinkCloseEvent): void {
    if (link !== this.#link) return;
    this.#link = undefined;
    const error = new ClientError(
      'CONNECTION_CLOSED',
      `the connection closed (code ${event.code}${describeCloseReason(event.reason, undefined)})`,
    );
    if (event.code === MESSAGE_TOO_BIG) this.#onProtocolError(oversizeFrameError(event, error));
    this.#requests.failAllInflight(error);
    // While closing, `close()` owns what happens next.
    if (this.#lifetime.signal.aborted) return;
    this.#setStatus({ state: 'disconnected', error });
    // The loop reports its own outcome through the status; nobody awaits this promise.
    this.#reconnectLoop.run(error).catch(() => {});
  }

  /** A fatal handshake error: the connection can never be used again. */
  #closeWith(error: RicochetError): void {
    this.#closedError ??= error;
    this.#requests.failAllQueued(error);
    this.#setStatus({ state: 'closed', error });
  }

  #setStatus(status: ConnectionStatus): void {
    this.#status = status;
    this.#statusFeed.publish(status);
  }
}

/**
 * A link closed for a frame past a limit (1009) is not a network failure that goes away: the
 * same frame would come again after the reconnect. So it is said where the application looks
 * (`onProtocolError`), not only in the status. The link's own error says this client refused the
 * frame (ws's `maxPayload`); without one, the broker closed the link for a frame of this client's.
 */
function oversizeFrameError(event: LinkCloseEvent, closed: ClientError): ClientError {
  const why = describeCloseReason(event.reason, event.error);
  const what =
    event.error === undefined
      ? `the broker closed the connection for a frame of this client larger than it reads${why}`
      : `the broker sent a frame larger than this client reads${why}; a broker that does not know hello.maxFrameBytes may send it again after the reconnect`;
  return new ClientError('PROTOCOL_ERROR', `${what} (close code 1009)`, { cause: closed });
}

/** Why the last attempt or session failed, as a status tells it. */
function lastErrorOf(status: ConnectionStatus): RicochetError | undefined {
  return 'error' in status ? status.error : undefined;
}
