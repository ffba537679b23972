import {
  badRequestError,
  type CallOptions,
  ClientError,
  Connection,
  type ConnectionStatus,
  checkConsumerGroup,
  checkIntegerField,
  checkSubscriptions,
  connectionOptionsOf,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  isTracingLoaded,
  loadTracing,
  ReceivedMessage,
  receiptHandleOf,
  replaceReceiptHandle,
  untilAborted,
} from '@ricochet/client';
import { BrokerError, changeInvisibleDurationFrameSchema, receiveFrameSchema } from '@ricochet/protocol';
import { AttemptSpans } from './attempt-spans.js';
import { type Leases, OWNER_RECEIVE_FEATURES, OwnerReceives } from './owner-receives.js';
import { SettleSessions } from './settle-sessions.js';
import {
  DEFAULT_AWAIT_DURATION_MS,
  DEFAULT_UNAVAILABLE_RETRY_MS,
  type SimpleConsumerCloseOptions,
  type SimpleConsumerOptions,
} from './simple-consumer-options.js';
import { retryIfUnavailable } from './unavailable-retry.js';

/** The longest reason a dead-letter may carry, as the protocol allows. */
const MAX_REASON_LENGTH = 1_024;

/**
 * A consumer that pulls messages under a lease, as RocketMQ 5's SimpleConsumer does: `receive`
 * leases messages for an invisible duration; `ack` commits one while its lease is live;
 * `changeInvisibleDuration` moves the deadline. A message not acked by its deadline is delivered
 * again, so the retry interval is the invisible duration minus the processing time.
 *
 * Leases are not tied to a connection: a message received before a reconnect can still be acked
 * after it, until its deadline. Against brokers that spread their queues, it leases each queue's
 * messages from its owner and settles them there (`routeToOwners`). A `receive` or `ack` answered
 * `503` (a queue between owners while a spread cluster moves it) is retried after a short backoff
 * for up to `unavailableRetryMs`; other failed calls are not retried here, and a `retryable` one
 * (`CONNECTION_CLOSED`, `TIMEOUT`, a `503` past that time) may be retried by the caller.
 *
 * @example
 * await using consumer = new SimpleConsumer({ endpoint, group: 'billing', subscriptions: { orders: '*' } });
 * await consumer.start();
 * for (const message of await consumer.receive(10, 30_000)) {
 *   await handle(message);
 *   await consumer.ack(message);
 * }
 * @see DESIGN.md §3 S1–S5
 */
export class SimpleConsumer {
  readonly #connection: Connection;
  readonly #group: string;
  readonly #subscriptions: Readonly<Record<string, string>>;
  readonly #awaitDurationMs: number;
  readonly #receiveTimeoutMs: number;
  readonly #unavailableRetryMs: number;
  /** Aborted by `close()`: pending receives end at once rather than hold the close up. */
  readonly #lifetime = new AbortController();
  /** The running `changeInvisibleDuration` of each message, so calls on one message run in order. */
  readonly #handleChanges = new WeakMap<ReceivedMessage, Promise<void>>();
  /** With `routeToOwners`: the queue map, a session per owner, and where each message was leased. */
  readonly #owners: OwnerReceives | undefined;
  /** Where each settle goes: the session that leased the message, else the own one. */
  readonly #settles: SettleSessions;
  /** The `process` span of each traced message from `receive` to the end of its attempt. */
  readonly #spans: AttemptSpans;
  #started = false;
  /** The running or finished `start()`: connect, then register the subscriptions. */
  #starting: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  /**
   * @throws ClientError `400` when the group, a subscription or an option is invalid, `endpoint`
   *   is an empty list, or it (or an entry of it) is not a URL of a known scheme.
   */
  constructor(options: SimpleConsumerOptions) {
    checkConsumerGroup(options.group);
    this.#group = options.group;
    this.#spans = new AttemptSpans(options.group);
    this.#subscriptions = checkSubscriptions(options.subscriptions);
    this.#awaitDurationMs = options.awaitDurationMs ?? DEFAULT_AWAIT_DURATION_MS;
    checkIntegerField(receiveFrameSchema.shape.awaitDurationMs, this.#awaitDurationMs, 'awaitDurationMs');
    this.#unavailableRetryMs = options.unavailableRetryMs ?? DEFAULT_UNAVAILABLE_RETRY_MS;
    if (!(Number.isFinite(this.#unavailableRetryMs) && this.#unavailableRetryMs >= 0)) {
      throw badRequestError(
        `unavailableRetryMs must be a number of ms >= 0, got ${this.#unavailableRetryMs}`,
      );
    }
    const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    // docs/protocol: a receive's timeout MUST be longer than its awaitDurationMs.
    this.#receiveTimeoutMs = this.#awaitDurationMs + requestTimeoutMs;
    const connectionOptions = connectionOptionsOf(options, requestTimeoutMs);
    const routeToOwners = options.routeToOwners ?? true;
    this.#connection = new Connection(
      routeToOwners ? { ...connectionOptions, features: OWNER_RECEIVE_FEATURES } : connectionOptions,
    );
    this.#owners = routeToOwners ? new OwnerReceives(this.#connection, connectionOptions) : undefined;
    this.#settles = new SettleSessions(this.#connection, this.#owners);
  }

  /** The consumer group. */
  get group(): string {
    return this.#group;
  }

  /** The connection's current status. */
  get connectionStatus(): ConnectionStatus {
    return this.#connection.currentStatus;
  }

  /** The connection's status changes from now on, ending when the consumer closes. */
  status(): AsyncIterable<ConnectionStatus> {
    return this.#connection.status();
  }

  /**
   * Connect to the broker, retrying with the reconnect backoff until it accepts or refuses the
   * handshake with a non-retryable code, then register the subscriptions: a new group's position in
   * each topic is taken now (its `startFrom`), so a message sent after `start()` resolved is
   * received by the next `receive`. The other calls start the consumer by themselves. Idempotent
   * while starting or started; after a failure it may be called again.
   *
   * @param options.signal - stops waiting (`ABORTED`); call `close()` to stop connecting.
   * @throws BrokerError with the broker's code, e.g. `401` when the handshake is refused, `404`
   *   for an unknown group or topic when the broker does not create them, `400` for a
   *   broadcasting group.
   * @throws ClientError `CLIENT_CLOSED` after `close()`, `ABORTED` when `signal` fires, `TIMEOUT`.
   */
  start(options: CallOptions = {}): Promise<void> {
    if (this.#closing !== undefined) return Promise.reject(closedError());
    this.#started = true;
    if (this.#starting === undefined) {
      const starting = this.#connectAndRegister();
      this.#starting = starting;
      // A failed start may be tried again.
      starting.catch(() => {
        if (this.#starting === starting) this.#starting = undefined;
      });
    }
    return untilAborted(this.#starting, options.signal, 'waiting for start()');
  }

  async #connectAndRegister(): Promise<void> {
    await Promise.all([this.#connection.connect(), loadTracing()]);
    try {
      await this.#connection.request(
        { type: 'register', group: this.#group, subscriptions: this.#subscriptions },
        { signal: this.#lifetime.signal },
      );
    } catch (error) {
      if (this.#lifetime.signal.aborted) throw closedError();
      throw error;
    }
    // Only a consumer that started talks to the owners: one refused holds its own session only.
    this.#owners?.activate();
  }

  /**
   * Lease up to `maxMessages` messages for `invisibleDurationMs` (S2). When none is ready, the
   * broker holds the call for up to `awaitDurationMs` and may then answer with none.
   *
   * @param maxMessages - 1 to 32.
   * @param invisibleDurationMs - 10 ms to 12 h: how long the messages stay invisible to other
   *   receivers; unacked, they are delivered again after it.
   * @throws ClientError `400` for an argument out of range, before any I/O.
   * @throws BrokerError with the broker's code, e.g. `404` for an unknown topic or group, or the
   *   last `503` once `unavailableRetryMs` leaves no time for another retry.
   * @throws ClientError `TIMEOUT`, `CONNECTION_CLOSED` (both retryable), `ABORTED`, or
   *   `CLIENT_CLOSED` (also when `close()` is called while the receive waits).
   */
  async receive(
    maxMessages: number,
    invisibleDurationMs: number,
    options: CallOptions = {},
  ): Promise<ReceivedMessage[]> {
    checkIntegerField(receiveFrameSchema.shape.maxMessages, maxMessages, 'maxMessages');
    checkIntegerField(
      receiveFrameSchema.shape.invisibleDurationMs,
      invisibleDurationMs,
      'invisibleDurationMs',
    );
    this.#ensureStarted();
    // A receive is not drained on close: its answer would lease messages nobody will process.
    const signal =
      options.signal === undefined
        ? this.#lifetime.signal
        : AbortSignal.any([options.signal, this.#lifetime.signal]);
    try {
      const request = () => this.#lease(maxMessages, invisibleDurationMs, signal);
      let leases: Leases[];
      try {
        leases = await request();
      } catch (error) {
        leases = await retryIfUnavailable(error, request, this.#unavailableRetryMs, signal, 'the receive');
      }
      const messages = leases.flatMap(({ session, messages: leased }) =>
        leased.map((delivered) => {
          const message = new ReceivedMessage(delivered);
          this.#owners?.leasedOn(message, session);
          return message;
        }),
      );
      // Once, if this receive overtook start(): its messages are traced like every later one.
      if (!isTracingLoaded()) await loadTracing();
      this.#spans.received(messages, invisibleDurationMs);
      return messages;
    } catch (error) {
      if (this.#lifetime.signal.aborted && error instanceof ClientError && error.code === 'ABORTED') {
        throw closedError();
      }
      throw error;
    }
  }

  /**
   * One receive's leases: from the owners, none waiting, when there is a route to each
   * (`OwnerReceives`); else, or when none had a message and the receive is to wait, through the
   * consumer's own session, whose broker waits on every queue.
   */
  async #lease(maxMessages: number, invisibleDurationMs: number, signal: AbortSignal): Promise<Leases[]> {
    const frame = {
      type: 'receive',
      group: this.#group,
      subscriptions: this.#subscriptions,
      maxMessages,
      invisibleDurationMs,
    } as const;
    const options = { signal, timeoutMs: this.#receiveTimeoutMs };
    const fromOwners = await this.#owners?.lease(frame, options);
    if (fromOwners !== undefined && (fromOwners.length > 0 || this.#awaitDurationMs === 0)) return fromOwners;
    const answer = await this.#connection.request(
      { ...frame, awaitDurationMs: this.#awaitDurationMs },
      options,
    );
    return [{ session: this.#connection, messages: answer.messages }];
  }

  /**
   * Commit `message` while its lease is live (S3), using its current receipt handle: after a
   * `changeInvisibleDuration` on the same message, the new one (a change still running is waited for).
   *
   * @throws ClientError `400` when `message` did not come from `receive`.
   * @throws BrokerError `410 INVALID_RECEIPT_HANDLE` when the lease expired, the handle was
   *   replaced, or the message was already acked; the last `503` once `unavailableRetryMs` leaves
   *   no time for another retry; another code when the broker refused the frame.
   * @throws ClientError `TIMEOUT`, `CONNECTION_CLOSED` (both retryable), `ABORTED`, `CLIENT_CLOSED`.
   */
  async ack(message: ReceivedMessage, options: CallOptions = {}): Promise<void> {
    checkReceivedMessage(message);
    this.#ensureStarted();
    // Ack with the handle the running change produces, not the one it is about to kill (S4).
    const change = this.#handleChanges.get(message);
    if (change) await change.catch(() => {});
    const handle = receiptHandleOf(message);
    const ack = () => this.#settles.ack(message, handle, options.signal);
    try {
      await ack();
    } catch (error) {
      // A 503 (its queue between owners) left the lease as it was: the retry acks it at most once.
      await retryIfUnavailable(error, ack, this.#unavailableRetryMs, options.signal, 'the ack');
    }
    this.#spans.acked(message);
  }

  /**
   * Move `message` to the group's DLQ (`%DLQ%<group>`) now, whatever attempts remain, while its
   * lease is live (D3, RocketMQ's delay level −1): for a message that can never be processed. The
   * delivery counts as a failed attempt; `reason` is kept in its history and DLQ record.
   *
   * @param reason - why, at most 1 024 characters. @default 'dead-lettered by the consumer'
   * @throws ClientError `400` when `message` did not come from `receive` or `reason` is too long.
   * @throws BrokerError `410 INVALID_RECEIPT_HANDLE` when the lease expired, was replaced or settled.
   * @throws ClientError `TIMEOUT`, `CONNECTION_CLOSED` (both retryable), `ABORTED`, `CLIENT_CLOSED`.
   */
  async deadLetter(message: ReceivedMessage, reason?: string, options: CallOptions = {}): Promise<void> {
    checkReceivedMessage(message);
    if (reason !== undefined && !(typeof reason === 'string' && reason.length <= MAX_REASON_LENGTH)) {
      throw badRequestError(`reason must be a string of at most ${MAX_REASON_LENGTH} characters`);
    }
    this.#ensureStarted();
    // Use the handle a running change produces, as ack does (S4).
    const change = this.#handleChanges.get(message);
    if (change) await change.catch(() => {});
    const item = { receiptHandle: receiptHandleOf(message), deadLetter: true } as const;
    const answer = await this.#settles.request(
      message,
      { type: 'nack', items: [reason === undefined ? item : { ...item, reason }] },
      options,
    );
    const [failure] = answer.failures;
    if (failure !== undefined) {
      throw new BrokerError(failure.code, failure.message, { details: { messageId: message.messageId } });
    }
    this.#spans.deadLettered(message, reason);
  }

  /**
   * Move the deadline of `message`'s live lease to now + `invisibleDurationMs` (S4). The broker
   * answers with a new receipt handle, which replaces the old one inside `message` in one step:
   * a later `ack(message)` uses it. Calls on the same message run one after another.
   *
   * @param invisibleDurationMs - 0 to 12 h; 0 makes the message visible again at once.
   * @throws ClientError `400` for a duration out of range or a message not from `receive`, before any I/O.
   * @throws BrokerError `410 INVALID_RECEIPT_HANDLE` when the lease expired, was replaced or acked.
   * @throws ClientError `TIMEOUT`, `CONNECTION_CLOSED` (both retryable), `ABORTED`, `CLIENT_CLOSED`.
   */
  changeInvisibleDuration(
    message: ReceivedMessage,
    invisibleDurationMs: number,
    options: CallOptions = {},
  ): Promise<void> {
    try {
      checkReceivedMessage(message);
      checkIntegerField(
        changeInvisibleDurationFrameSchema.shape.invisibleDurationMs,
        invisibleDurationMs,
        'invisibleDurationMs',
      );
    } catch (error) {
      return Promise.reject(error);
    }
    this.#ensureStarted();
    const previous = this.#handleChanges.get(message);
    const change = (async () => {
      // Each change must present the handle the previous one returned, or the broker refuses it.
      await previous?.catch(() => {});
      const answer = await this.#settles.request(
        message,
        { type: 'changeInvisibleDuration', receiptHandle: receiptHandleOf(message), invisibleDurationMs },
        options,
      );
      if (answer.messageId !== message.messageId) {
        throw new ClientError(
          'PROTOCOL_ERROR',
          `the broker changed the lease of ${answer.messageId}, not of ${message.messageId}`,
        );
      }
      replaceReceiptHandle(message, answer.receiptHandle);
      this.#spans.changed(message, invisibleDurationMs);
    })();
    this.#handleChanges.set(message, change);
    const forget = (): void => {
      if (this.#handleChanges.get(message) === change) this.#handleChanges.delete(message);
    };
    change.then(forget, forget);
    return change;
  }

  /**
   * Stop: pending receives fail at once with `CLIENT_CLOSED` (the messages they might lease come
   * back after their invisible duration); in-flight acks and changes may finish for up to
   * `timeoutMs`; then the connection closes. Idempotent: a later call returns the first one's
   * promise, whatever its options.
   *
   * @param options.timeoutMs - how long in-flight `ack` and `changeInvisibleDuration` calls may
   *   still be answered before they fail with `CLIENT_CLOSED`. @default 5000 (ms)
   */
  close(options: SimpleConsumerCloseOptions = {}): Promise<void> {
    if (this.#closing === undefined) {
      this.#lifetime.abort(closedError());
      const drainTimeoutMs = options.timeoutMs ?? options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS;
      // The owners' sessions drain as the own one does: an ack in flight on either may still commit.
      this.#closing = Promise.all([this.#connection.close({ drainTimeoutMs }), this.#owners?.close()])
        .then(() => {})
        // After the drain: an ack that was in flight still ends its span as a success.
        .finally(() => this.#spans.closed());
    }
    return this.#closing;
  }

  /** Same as {@link close} with its defaults, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #ensureStarted(): void {
    if (this.#started) return;
    // A connection failure reaches the caller through its request; nothing to report here.
    this.start().catch(() => {});
  }
}

function closedError(): ClientError {
  return new ClientError('CLIENT_CLOSED', 'the consumer is closed');
}

function checkReceivedMessage(message: ReceivedMessage): void {
  if (!(message instanceof ReceivedMessage)) {
    throw badRequestError('expected a message returned by receive()');
  }
}
