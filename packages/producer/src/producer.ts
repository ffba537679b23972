import {
  abortedError,
  badRequestError,
  type CallOptions,
  type ClientCloseOptions,
  ClientError,
  type ClientOptions,
  Connection,
  type ConnectionStatus,
  connectionOptionsOf,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  drainWithTimeout,
  IdleWaiters,
  isTracingLoaded,
  loadTracing,
  OwnerRoutes,
  type SendSpan,
  startSendSpan,
  TickBatcher,
  toRicochetError,
} from '@ricochet/client';
import { ExponentialBackoff, type ExponentialBackoffOptions } from '@ricochet/core';
import {
  BrokerError,
  DEFAULT_MAX_BODY_BYTES,
  MAX_SEND_BATCH_MESSAGES,
  QUEUE_MAP_FEATURE,
  RicochetError,
  type SendResultFrame,
} from '@ricochet/protocol';
import {
  type PreparedMessage,
  type ProducerMessage,
  prepareMessage,
  withTraceContext,
} from './outgoing-message.js';
import { batchByteLimit, takeBatch } from './send-batch.js';
import { SendLane } from './send-lane.js';
import { DEFAULT_SEND_TIMEOUT_MS, retryDecision } from './send-retry.js';

/**
 * The most messages one `send` frame carries. Smaller than the protocol's limit on purpose: a
 * thousand concurrent sends then travel as several frames, so the broker commits one while the
 * next is on its way, instead of both sides taking turns on one big frame.
 */
const MAX_FRAME_MESSAGES = 256;

/** How many times a message is tried unless told otherwise, the first try included (R2). */
export const DEFAULT_MAX_ATTEMPTS = 3;

/** Options of {@link Producer}. */
export interface ProducerOptions extends ClientOptions {
  /**
   * How many times a message is tried, the first try included (R2). Network failures, timeouts
   * and retryable broker codes other than `503` are retried at once, and `530 TOO_MANY_REQUESTS`
   * after {@link retryBackoff}, until this many attempts were made. `503 BROKER_UNAVAILABLE` (a
   * queue between owners) is retried after a short backoff until {@link sendTimeoutMs} instead,
   * and such attempts do not count here. `1` turns every retry off, `503`'s included.
   * @default 3
   */
  readonly maxAttempts?: number;
  /**
   * How long after `send` was called a `503 BROKER_UNAVAILABLE` may still be retried, in ms: a
   * queue between owners while a spread cluster moves it is retried after 25 ms, 50, 100, …
   * capped at 1 s (±20 % jitter, `handoverRetryDelayMs` of `@ricochet/core`) while the next
   * attempt can start before this deadline; then the send rejects with the last `503`. It bounds
   * these retries only: an attempt on the wire keeps its `requestTimeoutMs`, and the other
   * retries stay bounded by {@link maxAttempts}. See {@link DEFAULT_SEND_TIMEOUT_MS} for the default.
   * @default 30000 (ms)
   */
  readonly sendTimeoutMs?: number;
  /**
   * The backoff before retrying a message the broker throttled with `530` (R2), kept per message.
   * @default {} (the seeds' values: 1 s initial, ×1.6, ±20 % jitter, 120 s max)
   */
  readonly retryBackoff?: ExponentialBackoffOptions;
  /**
   * Send each message straight to its queue's owner when the broker is one of several spreading a
   * store's queues (DESIGN.md §9): the producer asks for the queue map in its handshake, and a
   * broker that serves a spread store tells it the owners and their endpoints, and every move.
   * Messages of a queue whose owner is not connected yet, and every message on HTTP or with a
   * broker that tells no map, go to the `endpoint` broker, which forwards them, as with `false`.
   * A route that goes stale (the owner stopped) is followed: the message is sent again through the
   * `endpoint` broker with its id, outside `maxAttempts`, within `sendTimeoutMs`.
   * @default true
   */
  readonly routeToOwners?: boolean;
}

/** What `send` resolves with once the broker has stored the message durably (R1). */
export interface SendResult {
  readonly messageId: string;
  /** The message's position in its topic's log. */
  readonly offset: number;
}

/**
 * Options of {@link Producer.send}.
 * @deprecated Use `CallOptions` (the same `{ signal }`), the one name of every client.
 */
export type SendOptions = CallOptions;

/** Options of {@link Producer.close}. */
export interface ProducerCloseOptions extends ClientCloseOptions {
  /**
   * How long pending sends may still complete. @default 5000 (ms)
   * @deprecated Use `timeoutMs`; when both are given, `timeoutMs` wins.
   */
  readonly drainTimeoutMs?: number;
}

/** Where one message stands. */
type PendingState = 'queued' | 'onTheWire' | 'backingOff' | 'settled';

interface PendingSend extends PreparedMessage {
  state: PendingState;
  attempts: number;
  /** Attempts answered `503` and retried after the handover backoff: not counted by `maxAttempts`. */
  handoverRetries: number;
  /** When `503` stops being retried, in `Date.now()` ms: the send's start plus `sendTimeoutMs`. */
  readonly deadlineMs: number;
  /** Created at the first `530`; each message backs off on its own schedule (R2). */
  backoff: ExponentialBackoff | undefined;
  retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** The message's `send <topic>` span, when it is traced. */
  readonly span: SendSpan | undefined;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
  readonly resolve: (result: SendResult) => void;
  readonly reject: (error: RicochetError) => void;
}

/**
 * Sends messages to a broker with RocketMQ 5's producer semantics: a send resolves only on the
 * broker's durable receipt (R1); failures are retried up to `maxAttempts` with the same
 * `messageId` (R2, R3), throttling (`530`) after an exponential backoff, and a queue between
 * owners (`503`, a spread cluster moving queues) after a short backoff until `sendTimeoutMs`;
 * sends made in the same tick travel together in one `send` frame, each with its own receipt.
 *
 * @example
 * await using producer = new Producer({ endpoint: 'ws://127.0.0.1:7720' });
 * await producer.start();
 * const { messageId, offset } = await producer.send({ topic: 'orders', body: '{"orderId":1042}' });
 * @see DESIGN.md §3 R1–R4, C1
 */
export class Producer {
  /** The connection to the `endpoint` broker: the session that tells the queue map, and the route of last resort. */
  readonly #connection: Connection;
  /** With `routeToOwners`: the queue map and a connection per owner (`@ricochet/client`'s `OwnerRoutes`). */
  readonly #routes: OwnerRoutes | undefined;
  readonly #maxAttempts: number;
  readonly #sendTimeoutMs: number;
  readonly #requestTimeoutMs: number;
  readonly #retryBackoff: ExponentialBackoffOptions;
  /**
   * Messages waiting to be put in a frame, in send order: sends made in the same tick share a
   * frame, as do the retries due together.
   */
  readonly #queue = new TickBatcher<PendingSend>({ flush: (queued) => this.#flush(queued) });
  /**
   * Each connection's sends on their way into frames: a frame goes at once unless its connection
   * is busy, when small ones gather until an answer comes back (`send-lane.ts`).
   */
  readonly #lanes = new WeakMap<Connection, SendLane<PendingSend>>();
  /** Every message not yet settled, wherever it is. */
  readonly #pending = new Set<PendingSend>();
  #started = false;
  #closing: Promise<void> | undefined;
  /** Waits for every pending send to settle, as `close()` drains them. */
  readonly #idle = new IdleWaiters(() => this.#pending.size === 0);

  /**
   * @throws ClientError `400` when an option is out of range, `endpoint` is an empty list, or it
   *   (or an entry of it) is not a URL of a known scheme.
   */
  constructor(options: ProducerOptions) {
    this.#maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
    if (!(Number.isInteger(this.#maxAttempts) && this.#maxAttempts >= 1)) {
      throw badRequestError(`maxAttempts must be an integer >= 1, got ${this.#maxAttempts}`);
    }
    this.#sendTimeoutMs = options.sendTimeoutMs ?? DEFAULT_SEND_TIMEOUT_MS;
    if (!(Number.isFinite(this.#sendTimeoutMs) && this.#sendTimeoutMs > 0)) {
      throw badRequestError(`sendTimeoutMs must be a positive number of ms, got ${this.#sendTimeoutMs}`);
    }
    this.#requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#retryBackoff = options.retryBackoff ?? {};
    // Fail on bad backoff settings now, not at the first 530.
    new ExponentialBackoff(this.#retryBackoff);
    const connectionOptions = connectionOptionsOf(options, this.#requestTimeoutMs);
    const routeToOwners = options.routeToOwners ?? true;
    this.#connection = new Connection(
      routeToOwners ? { ...connectionOptions, features: [QUEUE_MAP_FEATURE] } : connectionOptions,
    );
    this.#routes = routeToOwners ? new OwnerRoutes(this.#connection, connectionOptions) : undefined;
    // Settles within a few ms; a send made before it waits for it (see send()).
    void loadTracing();
  }

  /** The connection's current status. */
  get connectionStatus(): ConnectionStatus {
    return this.#connection.currentStatus;
  }

  /** The connection's status changes from now on, ending when the producer closes. */
  status(): AsyncIterable<ConnectionStatus> {
    return this.#connection.status();
  }

  /**
   * Connect to the broker. Failed attempts are retried with the reconnect backoff until one
   * succeeds or the broker refuses the handshake with a non-retryable code. `send` starts the
   * producer by itself when needed; calling `start` first surfaces connection problems early.
   *
   * @param options.signal - stops waiting (`ABORTED`); call `close()` to stop connecting.
   * @throws BrokerError with the broker's code, e.g. `401`, when the handshake is refused.
   * @throws ClientError `CLIENT_CLOSED` after `close()`, `ABORTED` when `signal` fires.
   */
  start(options: CallOptions = {}): Promise<void> {
    if (this.#closing !== undefined) {
      return Promise.reject(new ClientError('CLIENT_CLOSED', 'the producer is closed'));
    }
    this.#started = true;
    return this.#connection.connect(options);
  }

  /**
   * Send one message; resolves once the broker has stored it durably (R1).
   *
   * @param options.signal - stops waiting (`ABORTED`) and makes no further attempt. An attempt
   *   already on the wire cannot be called back, so the message may still be stored.
   * @throws ClientError `400` for a malformed message and `413` for a body over the broker's
   *   `maxBodyBytes`, both before any I/O.
   * @throws BrokerError with the broker's code: at once for non-retryable codes (400, 401, 403,
   *   404, 409, 413, unknown codes), the last one after `maxAttempts`, or `503` once
   *   `sendTimeoutMs` leaves no time for another retry.
   * @throws ClientError `TIMEOUT` or `CONNECTION_CLOSED` after `maxAttempts`; `ABORTED` when
   *   `signal` fires; `CLIENT_CLOSED` after `close()`.
   */
  send(input: ProducerMessage, options: CallOptions = {}): Promise<SendResult> {
    if (this.#closing !== undefined) {
      return Promise.reject(new ClientError('CLIENT_CLOSED', 'the producer is closed'));
    }
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(abortedError(signal, 'the send'));
    // Until the optional tracing API is loaded or known absent (once per process), sends wait for it.
    if (!isTracingLoaded()) return loadTracing().then(() => this.send(input, options));
    let prepared: PreparedMessage;
    try {
      // Until the first welcome the broker's limit is unknown; its default is the best guess,
      // and the broker itself answers 413 for a body over a smaller limit.
      const maxBodyBytes = this.#connection.session?.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
      prepared = prepareMessage(input, maxBodyBytes, Date.now());
    } catch (error) {
      return Promise.reject(error);
    }
    const span = startSendSpan(prepared.message);
    if (span !== undefined) prepared = withTraceContext(prepared, span.carrier);
    if (!this.#started) {
      // A connection failure reaches this send through its request; nothing to report here.
      this.start().catch(() => {});
    }
    return new Promise((resolve, reject) => {
      // One object shape for every pending send, built field by field: this runs once per
      // message on the hot path, where a spread into a fresh literal costs measurably more.
      const pending: PendingSend = {
        message: prepared.message,
        encodedBytesEstimate: prepared.encodedBytesEstimate,
        state: 'queued',
        attempts: 0,
        handoverRetries: 0,
        deadlineMs: prepared.message.bornAt + this.#sendTimeoutMs,
        backoff: undefined,
        retryTimer: undefined,
        span,
        signal,
        onAbort:
          signal === undefined ? ignoreAbort : () => this.#settle(pending, abortedError(signal, 'the send')),
        resolve,
        reject,
      };
      signal?.addEventListener('abort', pending.onAbort, { once: true });
      this.#pending.add(pending);
      this.#enqueue(pending);
    });
  }

  /**
   * Stop taking sends, let pending ones (queued, waiting out a backoff, or on the wire) complete
   * for up to `timeoutMs` (retries included), fail the rest with `CLIENT_CLOSED`, and close the
   * connection. Idempotent: a later call returns the first one's promise, whatever its options.
   *
   * @param options.timeoutMs - how long pending sends may still complete. @default 5000 (ms)
   */
  close(options: ProducerCloseOptions = {}): Promise<void> {
    this.#closing ??= this.#shutdown(options.timeoutMs ?? options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS);
    return this.#closing;
  }

  /** Same as {@link close} with its defaults, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #shutdown(timeoutMs: number): Promise<void> {
    if (this.#pending.size > 0) await drainWithTimeout(this.#idle.whenIdle(), timeoutMs);
    const closedError = new ClientError(
      'CLIENT_CLOSED',
      'the producer was closed before the broker stored the message',
    );
    for (const pending of [...this.#pending]) this.#settle(pending, closedError);
    // Nothing of ours is left on the wire, so the connections need no drain of their own.
    await Promise.all([this.#routes?.close(), this.#connection.close({ drainTimeoutMs: 0 })]);
  }

  #enqueue(pending: PendingSend): void {
    pending.state = 'queued';
    this.#queue.add(pending);
  }

  /**
   * Split the sends queued in one tick by the connection each goes on (its queue's owner's, or the
   * `endpoint` broker's), then into frames within that broker's frame size, each connection's
   * through its lane.
   */
  #flush(queued: PendingSend[]): void {
    const routes = this.#routes;
    if (routes?.map === undefined) {
      this.#flushOn(this.#connection, queued);
      return;
    }
    const byConnection = new Map<Connection, PendingSend[]>();
    for (const pending of queued) {
      const connection = routes.connectionFor(pending.message);
      const sends = byConnection.get(connection);
      if (sends === undefined) byConnection.set(connection, [pending]);
      else sends.push(pending);
    }
    for (const [connection, sends] of byConnection) this.#flushOn(connection, sends);
  }

  #flushOn(connection: Connection, queued: PendingSend[]): void {
    let lane = this.#lanes.get(connection);
    if (lane === undefined) {
      const maxFrameBytes = () => batchByteLimit(connection.session?.maxFrameBytes);
      lane = new SendLane({
        takeFrame: (waiting) =>
          takeBatch(waiting, Math.min(MAX_FRAME_MESSAGES, MAX_SEND_BATCH_MESSAGES), maxFrameBytes()).filter(
            // Aborted while queued: settled already, but still in the queue.
            (pending) => pending.state === 'queued',
          ),
        maxFrameBytes,
        sendFrame: (batch, answered) => this.#sendBatch(connection, batch, answered),
      });
      this.#lanes.set(connection, lane);
    }
    lane.add(queued);
  }

  /**
   * Send `batch` as one frame on `connection`; `answered` is called once its answer (or failure)
   * arrived, before the sends settle, so that the lane's waiting sends leave ahead of those the
   * settled ones set off.
   */
  #sendBatch(connection: Connection, batch: readonly PendingSend[], answered: () => void): void {
    for (const pending of batch) {
      pending.state = 'onTheWire';
      pending.attempts += 1;
    }
    connection
      .request(
        { type: 'send', messages: batch.map((pending) => pending.message) },
        { timeoutMs: this.#requestTimeoutMs },
      )
      .then(
        (result) => {
          answered();
          this.#onReceipts(batch, result);
        },
        (error: unknown) => {
          answered();
          if (this.#routes?.isStaleRoute(connection, error)) {
            for (const pending of batch) this.#onStaleRoute(pending, error);
            return;
          }
          const failure = toRicochetError(error, 'the send');
          for (const pending of batch) this.#onFailure(pending, failure);
        },
      );
  }

  /**
   * The connection to the message's queue owner closed under it (the owner stopped, or the queue
   * moved and the route was retired): the message goes again at once, on the route the map gives
   * now (the `endpoint` broker, if the owner is not connected), with its id (R3: a copy the owner
   * stored is answered with its receipt). A route that failed is not an attempt of R2, only the
   * send's deadline bounds it, as it bounds the retries of a queue between owners.
   */
  #onStaleRoute(pending: PendingSend, error: unknown): void {
    if (pending.state !== 'onTheWire') return;
    if (Date.now() >= pending.deadlineMs) {
      this.#onFailure(pending, toRicochetError(error, 'the send'));
      return;
    }
    pending.attempts -= 1;
    this.#enqueue(pending);
  }

  #onReceipts(batch: readonly PendingSend[], result: SendResultFrame): void {
    batch.forEach((pending, index) => {
      const receipt = result.receipts[index];
      if (receipt === undefined || receipt.messageId !== pending.message.messageId) {
        this.#onFailure(
          pending,
          new ClientError(
            'PROTOCOL_ERROR',
            `receipt ${index} of the sendResult does not belong to message ${pending.message.messageId}`,
          ),
        );
      } else if (receipt.ok) {
        this.#settle(pending, { messageId: receipt.messageId, offset: receipt.offset });
      } else {
        this.#onFailure(pending, BrokerError.fromFrame(receipt.error));
      }
    });
  }

  /**
   * R2: retry a retryable failure while attempts remain, at once, or after the message's own
   * backoff for `530`; a `503` (a queue between owners) after the short handover backoff while
   * the send's deadline allows, outside the attempt count; otherwise fail with this (the last)
   * error, its code intact. The message keeps its id on every attempt (R3), so a retry of a send
   * that was in fact stored is answered with the original receipt.
   */
  #onFailure(pending: PendingSend, error: RicochetError): void {
    if (pending.state !== 'onTheWire') return;
    const decision = retryDecision({
      error,
      attempts: pending.attempts,
      handoverRetries: pending.handoverRetries,
      maxAttempts: this.#maxAttempts,
      deadlineMs: pending.deadlineMs,
      nowMs: Date.now(),
      random: Math.random,
      nextThrottleDelayMs: () => {
        pending.backoff ??= new ExponentialBackoff(this.#retryBackoff);
        return pending.backoff.nextDelayMs();
      },
    });
    if (decision.kind !== 'fail') pending.span?.retried(pending.attempts, String(error.code));
    if (decision.kind === 'fail') this.#settle(pending, error);
    else if (decision.kind === 'now') this.#enqueue(pending);
    else {
      if (decision.handover) pending.handoverRetries += 1;
      this.#retryAfter(pending, decision.delayMs);
    }
  }

  /** Put `pending` back in the queue after `delayMs`; `#settle` (an abort, `close`) cancels the wait. */
  #retryAfter(pending: PendingSend, delayMs: number): void {
    pending.state = 'backingOff';
    pending.retryTimer = setTimeout(() => {
      pending.retryTimer = undefined;
      this.#enqueue(pending);
    }, delayMs);
  }

  /** Resolve or reject `pending` once; later outcomes of its attempts are ignored. */
  #settle(pending: PendingSend, outcome: SendResult | RicochetError): void {
    if (pending.state === 'settled') return;
    pending.state = 'settled';
    clearTimeout(pending.retryTimer);
    pending.signal?.removeEventListener('abort', pending.onAbort);
    this.#pending.delete(pending);
    const failed = outcome instanceof RicochetError;
    pending.span?.end(pending.attempts, failed ? outcome : undefined);
    if (failed) pending.reject(outcome);
    else pending.resolve(outcome);
    this.#idle.check();
  }
}

/** The abort handler of a send made without a signal: there is nothing to abort. */
function ignoreAbort(): void {}
