import { ExponentialBackoff, type ExponentialBackoffOptions } from '@ricochet/core';
import {
  BrokerError,
  type BrokerFrame,
  type ClientFrame,
  type ClientRequestFrame,
  type DeliverFrame,
  decodeBrokerFrame,
  type ErrorFrame,
  encodeFrame,
  type HelloFrame,
  PROTOCOL_VERSION,
  type RicochetError,
  WEBSOCKET_PATH,
  WEBSOCKET_SUBPROTOCOL,
  type WelcomeFrame,
} from '@ricochet/protocol';
import { cancellableDelay } from './cancellable-delay.js';
import { abortedError, badRequestError, ClientError, toRicochetError, untilAborted } from './client-error.js';
import { type ConnectionStatus, StatusFeed } from './connection-status.js';
import { drainWithTimeout, IdleWaiters } from './drain-with-timeout.js';
import {
  loadWebSocket,
  messageBytes,
  WEB_SOCKET_CLOSED,
  type WebSocketCloseEvent,
  type WebSocketConstructor,
  type WebSocketErrorEvent,
  type WebSocketImplementation,
  type WebSocketLike,
  type WebSocketMessageEvent,
} from './web-socket.js';

/** How long a request may wait for its answer unless it says otherwise: 30 s. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** How long `close()` lets in-flight requests finish unless told otherwise: 5 s. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 5_000;

/**
 * How long `close()` waits for the WebSocket closing handshake before it stops waiting. The
 * socket is closed either way; this only bounds how long `close()` itself takes.
 */
const CLOSE_HANDSHAKE_TIMEOUT_MS = 1_000;

/** The WebSocket close code for a normal closure. */
const NORMAL_CLOSURE = 1000;

/** The answer frame type of every request frame type. */
export const ANSWER_TYPES = {
  send: 'sendResult',
  register: 'ok',
  subscribe: 'subscribed',
  unsubscribe: 'ok',
  ack: 'settled',
  nack: 'settled',
  release: 'settled',
  receive: 'messages',
  changeInvisibleDuration: 'invisibilityChanged',
} as const satisfies Record<ClientRequestFrame['type'], BrokerFrame['type']>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A request frame as callers write it: the connection assigns the `id`. */
export type RequestFrameInput = DistributiveOmit<ClientRequestFrame, 'id'>;

/** The frame that answers a request of type `TType`, e.g. `SendResultFrame` for `'send'`. */
export type AnswerFrame<TType extends RequestFrameInput['type']> = Extract<
  BrokerFrame,
  { type: (typeof ANSWER_TYPES)[TType] }
>;

/** A client frame that carries no `id` and gets no answer, such as `credit`. */
export type OneWayFrame = Exclude<ClientFrame, ClientRequestFrame | HelloFrame>;

/** A broker frame that answers no request: `deliver`, and `error` without `id`. */
export interface UnsolicitedFrames {
  readonly deliver: DeliverFrame;
  readonly error: ErrorFrame;
}

/** The type of an {@link UnsolicitedFrames} frame. */
export type UnsolicitedFrameType = keyof UnsolicitedFrames;

/** What the broker said about the current (or, while reconnecting, the last) session. */
export interface SessionInfo {
  readonly sessionId: string;
  readonly protocolVersion: number;
  /** The broker's body limit; a producer refuses larger bodies locally. */
  readonly maxBodyBytes: number;
  /**
   * The largest WebSocket message the broker reads; a larger one closes the connection (1009), so
   * a producer splits its batches below it.
   */
  readonly maxFrameBytes: number;
}

/** Options of {@link Connection}. */
export interface ConnectionOptions {
  /**
   * The broker's base URL, `ws://host:port` or `wss://host:port` (a path prefix is kept, for
   * brokers behind a proxy). The connection opens `endpoint` + `/v1/ws`. Required.
   */
  readonly endpoint: string;
  /** The auth token sent in `hello`. @default undefined (no token) */
  readonly token?: string;
  /** A name for this client in the broker's logs and delivery histories. @default undefined */
  readonly clientId?: string;
  /**
   * How long a request waits for its answer, counted from the call: time spent queued while
   * reconnecting counts too. A request can override it. @default 30000 (ms)
   */
  readonly requestTimeoutMs?: number;
  /**
   * The reconnect backoff (rule C1). Each connect attempt may take `attemptTimeoutMs()` of it,
   * at least `minConnectTimeoutMs`. Tests pass small values and a fake `clock`/`random`.
   * @default {} (the seeds' values: 1 s initial, ×1.6, ±20 % jitter, 120 s max, 20 s min attempt)
   */
  readonly reconnectBackoff?: ExponentialBackoffOptions;
  /**
   * The WebSocket implementation, for tests or unusual runtimes.
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
  /**
   * Called when a frame listener or a reconnect hook throws or rejects. The error goes no further.
   * @default console.error
   */
  readonly onHandlerError?: (error: unknown) => void;
}

/** Options of {@link Connection.request}. */
export interface RequestOptions {
  /** Gives up waiting: the request fails with `ABORTED`. @default undefined */
  readonly signal?: AbortSignal;
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

interface PendingRequest {
  readonly frame: RequestFrameInput;
  readonly answerType: BrokerFrame['type'];
  /** Assigned when the frame is written to a session; ids are scoped to one session. */
  id: number | undefined;
  settled: boolean;
  readonly resolve: (frame: BrokerFrame) => void;
  readonly reject: (error: RicochetError) => void;
  readonly timer: ReturnType<typeof setTimeout>;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

type FrameHandler = (frame: never) => void;
type ReconnectedHandler = () => void | Promise<void>;

/**
 * The one WebSocket connection to a broker that every Ricochet client builds on: the handshake,
 * request/answer correlation by `id`, per-request timeouts, listeners for unsolicited frames, and
 * the reconnect loop of rule C1 (written once, here).
 *
 * Requests made while no session is open wait in an outgoing queue, apart from the in-flight
 * table, and are written once a session opens; both are bounded by the request's timeout. When a
 * session drops, every in-flight request fails with the retryable `CONNECTION_CLOSED` and the
 * connection reconnects with exponential backoff; `onReconnected` hooks then run (consumers
 * resubscribe there).
 *
 * @example
 * await using connection = new Connection({ endpoint: 'ws://127.0.0.1:7720' });
 * await connection.connect();
 * const result = await connection.request({ type: 'send', messages });
 * @see DESIGN.md §3 C1, docs/protocol/README.md (session lifecycle, correlation)
 */
export class Connection {
  readonly #url: string;
  readonly #hello: HelloFrame;
  readonly #requestTimeoutMs: number;
  readonly #backoff: ExponentialBackoff;
  readonly #webSocket: WebSocketConstructor | undefined;
  readonly #onProtocolError: (error: ClientError) => void;
  readonly #onHandlerError: (error: unknown) => void;
  /** Aborted by `close()`: every wait of the reconnect loop and every connect attempt stops. */
  readonly #lifetime = new AbortController();
  readonly #statusFeed = new StatusFeed();
  /** Requests waiting for a session, in call order. */
  readonly #outgoing = new Set<PendingRequest>();
  /** Requests written to the current session, by id, waiting for their answer. */
  readonly #inflight = new Map<number, PendingRequest>();
  readonly #frameHandlers = new Map<UnsolicitedFrameType, Set<FrameHandler>>();
  readonly #reconnectedHandlers = new Set<ReconnectedHandler>();
  #implementation: Promise<WebSocketImplementation> | undefined;
  #status: ConnectionStatus = { state: 'disconnected' };
  #socket: WebSocketLike | undefined;
  #session: SessionInfo | undefined;
  #sessionsOpened = 0;
  #nextRequestId = 0;
  /** The single-flight connect loop; `undefined` when none runs. */
  #connecting: Promise<void> | undefined;
  /** Set once the connection can never carry a request again: by `close()` or a fatal handshake. */
  #closedError: RicochetError | undefined;
  #closing: Promise<void> | undefined;
  /** Waits for the in-flight table to empty, as `close()` drains it. */
  readonly #drained = new IdleWaiters(() => this.#inflight.size === 0);

  /** @throws ClientError `400` when `endpoint` is not a `ws:` or `wss:` URL or an option is out of range. */
  constructor(options: ConnectionOptions) {
    this.#url = webSocketUrl(options.endpoint);
    this.#hello = {
      type: 'hello',
      protocolVersion: PROTOCOL_VERSION,
      ...(options.token === undefined ? {} : { token: options.token }),
      ...(options.clientId === undefined ? {} : { clientId: options.clientId }),
    };
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    assertPositive(this.#requestTimeoutMs, 'requestTimeoutMs');
    this.#backoff = new ExponentialBackoff(options.reconnectBackoff);
    this.#webSocket = options.webSocket;
    this.#onProtocolError = options.onProtocolError ?? ((error) => console.warn(error));
    this.#onHandlerError = options.onHandlerError ?? ((error) => console.error(error));
  }

  /** The current status; see {@link status} for the changes. */
  get currentStatus(): ConnectionStatus {
    return this.#status;
  }

  /**
   * What the broker announced in the `welcome` of the current session, or of the last one while
   * reconnecting; `undefined` before the first session.
   */
  get session(): SessionInfo | undefined {
    return this.#session;
  }

  /**
   * Open the first session. Failed attempts are retried with the reconnect backoff until one
   * succeeds, the broker refuses the handshake with a non-retryable code (then the connection
   * closes with that error), or `close()` is called. Concurrent calls share one attempt loop.
   *
   * @param options.signal - stops waiting (rejects with `ABORTED`); the loop itself keeps going
   *   until `close()`, so a caller that gives up should close the connection.
   * @throws BrokerError with the broker's code, e.g. `401`, when the handshake is refused.
   * @throws ClientError `CLIENT_CLOSED` after `close()`, `ABORTED` when `signal` fires, `PROTOCOL_ERROR`
   *   when the broker does not speak `ricochet.v1`.
   */
  async connect(options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    if (this.#closedError !== undefined) throw this.#closedError;
    if (this.#status.state === 'connected') return;
    await untilAborted(this.#connectOnce(undefined), options.signal, 'connect');
  }

  /**
   * Send a request and resolve with its answer, the broker frame carrying the same `id`.
   *
   * @throws BrokerError when the broker answers with an `error` frame; `code` is the broker's.
   * @throws ClientError `TIMEOUT` (retryable) after `timeoutMs`; `CONNECTION_CLOSED` (retryable)
   *   when the session drops first; `ABORTED` when `signal` fires; `CLIENT_CLOSED` after `close()`;
   *   `PROTOCOL_ERROR` when the answer is not the expected frame.
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
      assertPositive(timeoutMs, 'timeoutMs');
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      const pending: PendingRequest = {
        frame,
        answerType: ANSWER_TYPES[frame.type],
        id: undefined,
        settled: false,
        resolve: resolve as (frame: BrokerFrame) => void,
        reject,
        timer: setTimeout(() => {
          this.#fail(
            pending,
            new ClientError('TIMEOUT', `no answer to the ${frame.type} request within ${timeoutMs} ms`),
          );
        }, timeoutMs),
        signal,
        onAbort: () => {
          if (signal) this.#fail(pending, abortedError(signal, `the ${frame.type} request`));
        },
      };
      signal?.addEventListener('abort', pending.onAbort, { once: true });
      if (this.#socket !== undefined) this.#transmit(this.#socket, pending);
      else this.#outgoing.add(pending);
    });
  }

  /**
   * Send a frame that gets no answer, such as `credit`. Such frames belong to the session they
   * were sent on, so nothing is queued: without a session the frame is dropped.
   * @returns whether the frame was written to a session.
   */
  sendOneWay(frame: OneWayFrame): boolean {
    const socket = this.#socket;
    if (socket === undefined) return false;
    socket.send(encodeFrame(frame));
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
    let handlers = this.#frameHandlers.get(type);
    if (handlers === undefined) {
      handlers = new Set();
      this.#frameHandlers.set(type, handlers);
    }
    const stored = handler as FrameHandler;
    handlers.add(stored);
    return () => {
      handlers.delete(stored);
    };
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
   * `CLIENT_CLOSED`), and close the socket with code 1000. Idempotent: later calls return the
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
    for (const pending of [...this.#outgoing]) this.#fail(pending, closedError);
    if (this.#inflight.size > 0) await drainWithTimeout(this.#drained.whenIdle(), drainTimeoutMs);
    for (const pending of [...this.#inflight.values()]) this.#fail(pending, closedError);
    const socket = this.#socket;
    this.#socket = undefined;
    if (socket !== undefined) await closeSocket(socket, NORMAL_CLOSURE, 'client closed');
    // A fatal handshake error may have closed the connection already, with that error.
    if (this.#status.state !== 'closed') this.#setStatus({ state: 'closed' });
  }

  /**
   * The single-flight connect loop: every caller while one runs shares its promise.
   * @param dropError - why the last session ended; `undefined` for the first connect.
   */
  #connectOnce(dropError: RicochetError | undefined): Promise<void> {
    this.#connecting ??= this.#connectLoop(dropError);
    return this.#connecting;
  }

  /**
   * Connect attempts until one opens a session (rule C1). The first attempt of a first connect
   * runs at once; every other attempt waits `nextDelayMs()` first, so a broker that accepts and
   * at once drops connections is retried at the backoff's pace, not in a tight loop. The loop
   * ends with a session, a non-retryable handshake error (the connection closes with it), or
   * `close()`; it has no attempt limit of its own.
   */
  async #connectLoop(dropError: RicochetError | undefined): Promise<void> {
    try {
      await this.#connectAttempts(dropError);
    } finally {
      // Cleared as the loop ends, not a microtask later, so that a session dropping right after
      // it opened starts a new loop instead of joining this finished one.
      this.#connecting = undefined;
    }
  }

  async #connectAttempts(dropError: RicochetError | undefined): Promise<void> {
    const signal = this.#lifetime.signal;
    let lastError = dropError;
    for (let attempt = 1; ; attempt += 1) {
      if (dropError !== undefined || attempt > 1) {
        const delayMs = this.#backoff.nextDelayMs();
        this.#setStatus({
          state: 'reconnecting',
          attempt,
          delayMs,
          ...(lastError === undefined ? {} : { error: lastError }),
        });
        await cancellableDelay(delayMs, signal);
      } else {
        this.#setStatus({ state: 'connecting' });
      }
      try {
        await this.#openSession(this.#backoff.attemptTimeoutMs(), signal);
        return;
      } catch (thrown) {
        if (signal.aborted) throw signal.reason;
        const error = toRicochetError(thrown, 'the connect attempt');
        if (!error.retryable) {
          this.#closeWith(error);
          throw error;
        }
        lastError = error;
      }
    }
  }

  /** The injected constructor (treated as a standard WebSocket), else the runtime's; loaded once. */
  #webSocketImplementation(): Promise<WebSocketImplementation> {
    if (this.#implementation === undefined) {
      this.#implementation =
        this.#webSocket === undefined
          ? loadWebSocket()
          : Promise.resolve({ create: this.#webSocket, binaryType: 'arraybuffer' });
    }
    return this.#implementation;
  }

  /** One connect attempt: open the socket, check the subprotocol, `hello`, wait for `welcome`. */
  async #openSession(timeoutMs: number, signal: AbortSignal): Promise<void> {
    const implementation = await this.#webSocketImplementation();
    if (signal.aborted) throw signal.reason;
    await new Promise<void>((resolve, reject) => {
      let socket: WebSocketLike;
      try {
        socket = new implementation.create(this.#url, WEBSOCKET_SUBPROTOCOL);
        socket.binaryType = implementation.binaryType;
      } catch (cause) {
        reject(new ClientError('CONNECTION_CLOSED', `cannot open a WebSocket to ${this.#url}`, { cause }));
        return;
      }
      let socketError: unknown;
      const fail = (error: unknown): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        detach(socket);
        socket.close();
        reject(error);
      };
      const onAbort = (): void => fail(signal.reason);
      const timer = setTimeout(() => {
        fail(new ClientError('TIMEOUT', `no session with ${this.#url} within ${timeoutMs} ms`));
      }, timeoutMs);
      signal.addEventListener('abort', onAbort, { once: true });

      socket.onopen = () => {
        // The broker must select our subprotocol; a server that ignores it is not a Ricochet broker.
        if (socket.protocol !== WEBSOCKET_SUBPROTOCOL) {
          fail(
            new ClientError(
              'PROTOCOL_ERROR',
              `the server selected the subprotocol '${socket.protocol}', not '${WEBSOCKET_SUBPROTOCOL}'`,
            ),
          );
          return;
        }
        socket.send(encodeFrame(this.#hello));
      };
      socket.onmessage = (event: WebSocketMessageEvent) => {
        const bytes = messageBytes(event.data);
        const decoded = bytes === undefined ? undefined : decodeBrokerFrame(bytes);
        if (decoded === undefined || !decoded.ok) {
          const why = decoded === undefined ? 'a text message' : decoded.error.message;
          fail(new ClientError('PROTOCOL_ERROR', `the broker's first frame is not welcome: ${why}`));
          return;
        }
        const frame = decoded.frame;
        if (frame.type === 'error') {
          // A refused handshake (400, 401, 503, …): retried or not by the code's catalogue flag.
          fail(BrokerError.fromFrame(frame));
          return;
        }
        if (frame.type !== 'welcome' || frame.protocolVersion !== PROTOCOL_VERSION) {
          fail(
            new ClientError(
              'PROTOCOL_ERROR',
              frame.type === 'welcome'
                ? `the broker speaks protocol version ${frame.protocolVersion}, not ${PROTOCOL_VERSION}`
                : `the broker's first frame is ${frame.type}, not welcome`,
            ),
          );
          return;
        }
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.#adopt(socket, frame);
        resolve();
      };
      socket.onerror = (event: WebSocketErrorEvent) => {
        // The close event follows; keep what the error said for its message.
        socketError = event.error ?? event.message;
      };
      socket.onclose = (event: WebSocketCloseEvent) => {
        fail(
          new ClientError(
            'CONNECTION_CLOSED',
            `the connection to ${this.#url} closed before welcome (code ${event.code}${describeReason(event.reason, socketError)})`,
            socketError === undefined ? {} : { cause: socketError },
          ),
        );
      };
    });
  }

  /** Make `socket` the session: route its frames, write the queued requests, run the hooks. */
  #adopt(socket: WebSocketLike, welcome: WelcomeFrame): void {
    this.#session = {
      sessionId: welcome.sessionId,
      protocolVersion: welcome.protocolVersion,
      maxBodyBytes: welcome.maxBodyBytes,
      maxFrameBytes: welcome.maxFrameBytes,
    };
    this.#socket = socket;
    this.#sessionsOpened += 1;
    // C1: a successful handshake starts the next reconnect from INITIAL_BACKOFF again.
    this.#backoff.reset();
    socket.onmessage = (event: WebSocketMessageEvent) => this.#onMessage(event);
    socket.onclose = (event: WebSocketCloseEvent) => this.#onSocketClose(socket, event);
    // A close event always follows an error event; the close handler does the work.
    socket.onerror = () => {};
    this.#setStatus({ state: 'connected', sessionId: welcome.sessionId });
    // Deleting from a Set while iterating it is well defined: each entry is visited once.
    for (const pending of this.#outgoing) this.#transmit(socket, pending);
    if (this.#sessionsOpened > 1) {
      for (const handler of this.#reconnectedHandlers) this.#runHandler(handler);
    }
  }

  #transmit(socket: WebSocketLike, pending: PendingRequest): void {
    this.#outgoing.delete(pending);
    const id = this.#allocateRequestId();
    pending.id = id;
    this.#inflight.set(id, pending);
    try {
      socket.send(encodeFrame({ ...pending.frame, id } as ClientRequestFrame));
    } catch (cause) {
      this.#fail(pending, new ClientError('CONNECTION_CLOSED', 'the frame could not be written', { cause }));
    }
  }

  /** The next uint32 id, wrapping to 0, skipping ids still unanswered (only possible after a wrap). */
  #allocateRequestId(): number {
    let id: number;
    do {
      id = this.#nextRequestId;
      this.#nextRequestId = (this.#nextRequestId + 1) >>> 0;
    } while (this.#inflight.has(id));
    return id;
  }

  #onMessage(event: WebSocketMessageEvent): void {
    const bytes = messageBytes(event.data);
    if (bytes === undefined) {
      this.#reportProtocolError(new ClientError('PROTOCOL_ERROR', 'the broker sent a text message'));
      return;
    }
    const decoded = decodeBrokerFrame(bytes);
    if (!decoded.ok) {
      const error = new ClientError(
        'PROTOCOL_ERROR',
        `the broker sent an undecodable frame: ${decoded.error.message}`,
        { cause: decoded.error },
      );
      this.#reportProtocolError(error);
      // docs/protocol: fail the request the frame names when its id can be read; else ignore it.
      const pending = decoded.error.id === undefined ? undefined : this.#inflight.get(decoded.error.id);
      if (pending !== undefined) this.#fail(pending, error);
      return;
    }
    const frame = decoded.frame;
    switch (frame.type) {
      case 'deliver':
        this.#emit('deliver', frame);
        return;
      case 'welcome':
        this.#reportProtocolError(new ClientError('PROTOCOL_ERROR', 'the broker sent a second welcome'));
        return;
      case 'error':
        if (frame.id === undefined) this.#emit('error', frame);
        else this.#answer(frame.id, frame);
        return;
      default:
        this.#answer(frame.id, frame);
    }
  }

  #answer(id: number, frame: BrokerFrame): void {
    const pending = this.#inflight.get(id);
    // No entry: the request timed out or was aborted before its answer came. Nothing to do.
    if (pending === undefined) return;
    if (frame.type === 'error') {
      this.#fail(pending, BrokerError.fromFrame(frame));
    } else if (frame.type !== pending.answerType) {
      const error = new ClientError(
        'PROTOCOL_ERROR',
        `the broker answered ${pending.frame.type} with ${frame.type}, not ${pending.answerType}`,
      );
      this.#reportProtocolError(error);
      this.#fail(pending, error);
    } else if (this.#settle(pending)) {
      pending.resolve(frame);
    }
  }

  #emit<TType extends UnsolicitedFrameType>(type: TType, frame: UnsolicitedFrames[TType]): void {
    const handlers = this.#frameHandlers.get(type);
    if (handlers === undefined) return;
    for (const handler of handlers) {
      try {
        (handler as (frame: UnsolicitedFrames[TType]) => void)(frame);
      } catch (error) {
        this.#onHandlerError(error);
      }
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

  #onSocketClose(socket: WebSocketLike, event: WebSocketCloseEvent): void {
    if (socket !== this.#socket) return;
    this.#socket = undefined;
    const error = new ClientError(
      'CONNECTION_CLOSED',
      `the connection closed (code ${event.code}${describeReason(event.reason, undefined)})`,
    );
    for (const pending of [...this.#inflight.values()]) this.#fail(pending, error);
    // While closing, `close()` owns what happens next.
    if (this.#lifetime.signal.aborted) return;
    this.#setStatus({ state: 'disconnected', error });
    // The loop reports its own outcome through the status; nobody awaits this promise.
    this.#connectOnce(error).catch(() => {});
  }

  /** A fatal handshake error: the connection can never be used again. */
  #closeWith(error: RicochetError): void {
    this.#closedError ??= error;
    for (const pending of [...this.#outgoing]) this.#fail(pending, error);
    this.#setStatus({ state: 'closed', error });
  }

  /** Take `pending` out of the queue and the table; false when it was already settled. */
  #settle(pending: PendingRequest): boolean {
    if (pending.settled) return false;
    pending.settled = true;
    clearTimeout(pending.timer);
    pending.signal?.removeEventListener('abort', pending.onAbort);
    this.#outgoing.delete(pending);
    if (pending.id !== undefined && this.#inflight.get(pending.id) === pending) {
      this.#inflight.delete(pending.id);
      this.#drained.check();
    }
    return true;
  }

  #fail(pending: PendingRequest, error: RicochetError): void {
    if (this.#settle(pending)) pending.reject(error);
  }

  #reportProtocolError(error: ClientError): void {
    try {
      this.#onProtocolError(error);
    } catch (thrown) {
      this.#onHandlerError(thrown);
    }
  }

  #setStatus(status: ConnectionStatus): void {
    this.#status = status;
    this.#statusFeed.publish(status);
  }
}

/** `endpoint` + `/v1/ws`, keeping a path prefix. */
function webSocketUrl(endpoint: string): string {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch (cause) {
    throw badRequestError(`endpoint '${endpoint}' is not a URL`, { cause });
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') {
    throw badRequestError(`endpoint '${endpoint}' must start with ws:// or wss://`);
  }
  const prefix = url.pathname.replace(/\/+$/, '');
  return `${url.protocol}//${url.host}${prefix}${WEBSOCKET_PATH}`;
}

function assertPositive(value: number, name: string): void {
  if (!(Number.isFinite(value) && value > 0)) {
    throw badRequestError(`${name} must be a positive number, got ${value}`);
  }
}

function describeReason(reason: string, error: unknown): string {
  if (reason !== '') return `: ${reason}`;
  if (error instanceof Error) return `: ${error.message}`;
  if (typeof error === 'string' && error !== '') return `: ${error}`;
  return '';
}

/** Handlers that ignore everything, so a discarded socket's late events (ws emits `error` on close) go nowhere. */
function detach(socket: WebSocketLike): void {
  const ignore = (): void => {};
  socket.onopen = ignore;
  socket.onmessage = ignore;
  socket.onclose = ignore;
  socket.onerror = ignore;
}

/** Close `socket` and wait for its close event, at most {@link CLOSE_HANDSHAKE_TIMEOUT_MS}. */
function closeSocket(socket: WebSocketLike, code: number, reason: string): Promise<void> {
  detach(socket);
  if (socket.readyState === WEB_SOCKET_CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      // ws can cut the TCP connection without the closing handshake; standard sockets cannot.
      (socket as { terminate?: () => void }).terminate?.();
      resolve();
    }, CLOSE_HANDSHAKE_TIMEOUT_MS);
    socket.onclose = () => {
      clearTimeout(timer);
      resolve();
    };
    socket.close(code, reason);
  });
}
