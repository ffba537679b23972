import {
  ClientError,
  Connection,
  type ConnectionStatus,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  drainWithTimeout,
  ReceivedMessage,
  receiptHandleOf,
  toRicochetError,
  untilAborted,
} from '@ricochet/client';
import { ExponentialBackoff } from '@ricochet/core';
import { BrokerError, type DeliverFrame, type RicochetError } from '@ricochet/protocol';
import type { ConsumeOutcome } from './consume-result.js';
import { ListenerPool } from './listener-pool.js';
import {
  type PushConsumerOptions,
  type ResolvedPushConsumerOptions,
  resolvePushConsumerOptions,
} from './push-consumer-options.js';
import { type BatchOutcome, type PendingResult, ResultBatcher } from './result-batcher.js';

/**
 * How long a result waits for others to share its frame, in ms. Short: a result gives its credit
 * back when its frame is sent, so every millisecond here is one the broker cannot deliver in.
 */
const RESULT_FLUSH_DELAY_MS = 1;

/**
 * The most results per `ack`, `nack` or `release` frame (the protocol allows 1 024). The broker's
 * `deliver` frames carry up to 256, so a full one is answered by one frame at once, and its
 * commit overlaps the processing of the next delivery instead of waiting for it.
 */
const MAX_RESULTS_PER_FRAME = 256;

/** One subscription, valid on the session that opened it only (subscription ids are per session). */
interface Subscription {
  readonly id: number;
  readonly sessionId: string;
  /** False once unsubscribed, or once its session ended. */
  active: boolean;
}

/** A `subscribe` on the wire, and the deliveries that arrived before its answer. */
interface PendingSubscribe {
  readonly sessionId: string;
  readonly stash: DeliverFrame[];
  settled: Promise<void>;
}

/** A delivered message in the cache or in a listener. */
interface Delivery {
  readonly message: ReceivedMessage;
  readonly subscription: Subscription;
}

/** A result waiting in the batcher. */
interface ResultEntry extends PendingResult {
  readonly messageId: string;
  /** The session whose receipt handle this is; on any other the result is dropped (C2). */
  readonly sessionId: string;
  /** The subscription that gets a credit back once the result is sent; none for stray deliveries. */
  readonly creditTo: Subscription | undefined;
}

type Phase = 'idle' | 'starting' | 'running' | 'closing' | 'closed';

/**
 * A consumer the broker pushes messages to, as RocketMQ 5's PushConsumer: each delivered message
 * goes to `listener`, and its result settles the delivery — `SUCCESS` commits it, `FAILURE`, a
 * throw or a listener that outlives `consumptionTimeoutMs` fails it (retried after the group's
 * delay, P3, or dead-lettered after `maxRetries`, P4), `retryAfter(ms)` fails it with its own delay.
 *
 * Flow control: the broker never has more unsettled deliveries out to this consumer than
 * `maxCachedMessages`; deliveries wait in a local cache until one of `concurrency` listeners is
 * free, and messages with the same `messageGroup` (the FIFO key) are processed one at a time, in
 * order (P5).
 * Results travel in batches, and each batch sent gives its credit back.
 *
 * After a reconnect the consumer subscribes again (C1). The broker released the deliveries of
 * the lost session (C2) and delivers them again, so the cached messages of that session are
 * dropped unprocessed and results of listeners still running for it are not sent.
 *
 * @example
 * await using consumer = new PushConsumer({
 *   endpoint: 'ws://127.0.0.1:7720',
 *   group: 'billing',
 *   subscriptions: { orders: 'paid || refunded' },
 *   listener: async (message) => {
 *     await handle(JSON.parse(message.text()));
 *     return ConsumeResult.SUCCESS;
 *   },
 * });
 * await consumer.start();
 * @see DESIGN.md §3 P1–P6, C1, C2; docs/protocol/frames.md (`subscribe` … `settled`)
 */
export class PushConsumer {
  readonly #options: ResolvedPushConsumerOptions;
  readonly #connection: Connection;
  readonly #pool: ListenerPool<Delivery>;
  readonly #batcher: ResultBatcher<ResultEntry>;
  /** Paces attempts to subscribe again on one session after a retryable refusal. */
  readonly #resubscribeBackoff: ExponentialBackoff;
  #phase: Phase = 'idle';
  #starting: Promise<void> | undefined;
  #startWaiter: { readonly resolve: () => void; readonly reject: (error: unknown) => void } | undefined;
  /** The subscription of the current (or, until the reconnect hook runs, the last) session. */
  #subscription: Subscription | undefined;
  #subscribing: PendingSubscribe | undefined;
  #resubscribeTimer: ReturnType<typeof setTimeout> | undefined;
  /** `sessionId/subscriptionId` of stray subscriptions already asked to stop, so it is asked once. */
  readonly #strays = new Set<string>();
  #closing: Promise<void> | undefined;

  /** @throws ClientError `400` when the group, a subscription or an option is invalid. */
  constructor(options: PushConsumerOptions) {
    this.#options = resolvePushConsumerOptions(options);
    this.#connection = new Connection({
      endpoint: options.endpoint,
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      ...(options.token === undefined ? {} : { token: options.token }),
      ...(options.clientId === undefined ? {} : { clientId: options.clientId }),
      ...(options.reconnectBackoff === undefined ? {} : { reconnectBackoff: options.reconnectBackoff }),
      ...(options.webSocket === undefined ? {} : { webSocket: options.webSocket }),
      ...(options.onProtocolError === undefined ? {} : { onProtocolError: options.onProtocolError }),
    });
    this.#resubscribeBackoff = new ExponentialBackoff(options.reconnectBackoff);
    this.#pool = new ListenerPool<Delivery>({
      listener: this.#options.listener,
      concurrency: this.#options.concurrency,
      consumptionTimeoutMs: this.#options.consumptionTimeoutMs,
      // A delivery of an ended session has a dead receipt handle: the broker released it (C2).
      isLive: (delivery) => delivery.subscription.sessionId === this.#liveSessionId(),
      onOutcome: (delivery, outcome) => this.#onOutcome(delivery, outcome),
      onListenerError: this.#options.onListenerError,
    });
    this.#batcher = new ResultBatcher<ResultEntry>({
      flushDelayMs: RESULT_FLUSH_DELAY_MS,
      maxBatchSize: MAX_RESULTS_PER_FRAME,
      send: (frame) => this.#connection.request(frame),
      // Checked again at send time: the session may have ended since the result was queued, and a
      // queued request would otherwise be written to the next session.
      isSendable: (result) => result.sessionId === this.#liveSessionId(),
      onSent: (results) => this.#onSent(results),
      onSettled: (results, outcome) => this.#onSettled(results, outcome),
    });
    this.#connection.onFrame('deliver', (frame) => this.#onDeliver(frame));
    this.#connection.onFrame('error', (frame) => this.#report(BrokerError.fromFrame(frame)));
    this.#connection.onReconnected(() => this.#onReconnected());
  }

  /** The consumer group. */
  get group(): string {
    return this.#options.group;
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
   * Connect and subscribe; resolves once the broker has confirmed the subscription, after which
   * messages flow to the listener. Connect attempts are retried with the reconnect backoff, and a
   * subscribe cut off by a dropped connection is made again on the next one. Idempotent while
   * starting or started; after a failure it may be called again.
   *
   * @param options.signal - stops waiting (`ABORTED`); call `close()` to stop the consumer.
   * @throws BrokerError with the broker's code, e.g. `401` when the handshake is refused, `403`,
   *   or `404` when the group or a topic does not exist and the broker does not create them.
   * @throws ClientError `TIMEOUT` (retryable) when `subscribe` is not answered in time,
   *   `CLIENT_CLOSED` when `close()` is called first, `ABORTED` when `signal` fires.
   */
  start(options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    if (this.#closing !== undefined) return Promise.reject(closedError());
    this.#starting ??= this.#begin();
    return untilAborted(this.#starting, options.signal, 'waiting for start()');
  }

  /**
   * Stop gracefully: unsubscribe (no more deliveries), hand every cached message not yet started
   * back to the broker (`release`: not a failure, C2), wait up to `closeTimeoutMs` for running
   * listeners and send their results, then close the connection. Listeners still running after
   * `closeTimeoutMs` are left behind (their `context.signal` is aborted, their results ignored):
   * the broker releases their deliveries when the connection closes (C2), so those messages are
   * delivered again, here or to another instance. Idempotent.
   *
   * Takes at most about `closeTimeoutMs` (which also bounds waiting for the `unsubscribe` answer),
   * plus up to 5 s for the broker to answer the last result frames.
   */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  /** Same as {@link close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #begin(): Promise<void> {
    this.#phase = 'starting';
    const subscribed = new Promise<void>((resolve, reject) => {
      this.#startWaiter = { resolve, reject };
    });
    // Rejected by close() while connect() may still be pending; the await below observes it.
    subscribed.catch(() => {});
    try {
      await this.#connection.connect();
      this.#subscribe();
      await subscribed;
    } catch (error) {
      this.#startWaiter = undefined;
      this.#starting = undefined;
      if (this.#phase === 'starting') this.#phase = 'idle';
      throw error;
    }
  }

  async #shutdown(): Promise<void> {
    this.#phase = 'closing';
    clearTimeout(this.#resubscribeTimer);
    this.#startWaiter?.reject(closedError());
    this.#startWaiter = undefined;
    this.#pool.stop();
    // One budget of closeTimeoutMs for the three waits together.
    const deadlineMs = performance.now() + this.#options.closeTimeoutMs;
    const remainingMs = (): number => Math.max(0, deadlineMs - performance.now());
    // A subscribe on the wire may still open a subscription; wait for it, so it is stopped too.
    await drainWithTimeout(this.#subscribing?.settled ?? Promise.resolve(), remainingMs());
    // Deliveries stop before the cache is handed back, or the released messages could be
    // delivered straight back to this consumer.
    await drainWithTimeout(this.#unsubscribe(), remainingMs());
    this.#releaseCached();
    await drainWithTimeout(this.#pool.whenIdle(), remainingMs());
    // C2: the broker releases the deliveries of listeners still running once the connection closes.
    this.#pool.abandonRunning(
      new ClientError('CLIENT_CLOSED', 'the consumer closed before the listener finished'),
    );
    this.#batcher.flush();
    // Only the result frames are waited for: a subscribe or unsubscribe still unanswered has no
    // effect worth waiting for once the connection closes.
    await drainWithTimeout(this.#batcher.idle(), DEFAULT_DRAIN_TIMEOUT_MS);
    this.#batcher.close();
    await this.#connection.close({ drainTimeoutMs: 0 });
    this.#phase = 'closed';
  }

  #liveSessionId(): string | undefined {
    const status = this.#connection.currentStatus;
    return status.state === 'connected' ? status.sessionId : undefined;
  }

  /** Subscribe on the current session, unless a subscription or a subscribe exists for it. */
  #subscribe(): void {
    const sessionId = this.#liveSessionId();
    // Without a session, the reconnect hook subscribes once there is one again.
    if (sessionId === undefined || (this.#phase !== 'starting' && this.#phase !== 'running')) return;
    if (this.#subscription?.sessionId === sessionId || this.#subscribing?.sessionId === sessionId) return;
    const pending: PendingSubscribe = { sessionId, stash: [], settled: Promise.resolve() };
    this.#subscribing = pending;
    // Written at once, on this session: the status is `connected`, so nothing is queued.
    pending.settled = this.#connection
      .request({
        type: 'subscribe',
        group: this.#options.group,
        subscriptions: this.#options.subscriptions,
        maxCachedMessages: this.#options.maxCachedMessages,
      })
      .then(
        (answer) => this.#onSubscribed(pending, answer.subscriptionId),
        (error: unknown) => this.#onSubscribeFailed(pending, toRicochetError(error, 'the request')),
      );
  }

  #onSubscribed(pending: PendingSubscribe, subscriptionId: number): void {
    if (this.#subscribing === pending) this.#subscribing = undefined;
    const subscription: Subscription = { id: subscriptionId, sessionId: pending.sessionId, active: true };
    if (pending.sessionId !== this.#liveSessionId()) {
      subscription.active = false;
      return;
    }
    this.#subscription = subscription;
    this.#resubscribeBackoff.reset();
    if (this.#phase === 'starting') {
      this.#phase = 'running';
      this.#startWaiter?.resolve();
      this.#startWaiter = undefined;
    }
    // Deliveries can arrive in the same tick as `subscribed`, before this callback ran.
    for (const frame of pending.stash) this.#onDeliver(frame);
  }

  #onSubscribeFailed(pending: PendingSubscribe, error: RicochetError): void {
    if (this.#subscribing === pending) this.#subscribing = undefined;
    for (const frame of pending.stash) this.#onDeliver(frame);
    if (this.#phase !== 'starting' && this.#phase !== 'running') return;
    // The session ended first: the reconnect hook subscribes again on the next one (C1).
    if (error.code === 'CONNECTION_CLOSED') return;
    if (this.#phase === 'starting') {
      this.#startWaiter?.reject(error);
      this.#startWaiter = undefined;
      return;
    }
    this.#report(error);
    if (!error.retryable) return;
    clearTimeout(this.#resubscribeTimer);
    this.#resubscribeTimer = setTimeout(() => {
      this.#resubscribeTimer = undefined;
      this.#subscribe();
    }, this.#resubscribeBackoff.nextDelayMs());
  }

  /** A new session opened after a dropped one (C1). */
  #onReconnected(): void {
    const sessionId = this.#liveSessionId();
    const previous = this.#subscription;
    if (previous !== undefined && previous.sessionId !== sessionId) {
      previous.active = false;
      this.#subscription = undefined;
    }
    this.#strays.clear();
    // Their receipt handles died with the old session: the broker released them (C2) and will
    // deliver them again, with new handles.
    this.#pool.takeCached((delivery) => delivery.subscription.sessionId !== sessionId);
    clearTimeout(this.#resubscribeTimer);
    this.#resubscribeTimer = undefined;
    this.#resubscribeBackoff.reset();
    this.#subscribe();
  }

  #onDeliver(frame: DeliverFrame): void {
    const sessionId = this.#liveSessionId();
    if (sessionId === undefined) return;
    const subscription = this.#subscription;
    const known =
      subscription !== undefined &&
      subscription.sessionId === sessionId &&
      subscription.id === frame.subscriptionId;
    if (known && subscription.active && this.#phase === 'running') {
      this.#pool.add(
        frame.messages.map((delivered) => ({ message: new ReceivedMessage(delivered), subscription })),
      );
      return;
    }
    if (!known && this.#subscribing?.sessionId === sessionId) {
      this.#subscribing.stash.push(frame);
      return;
    }
    // Not for a live subscription (closing, or not ours): hand the messages back at once, as
    // docs/protocol/frames.md asks; they are Ready again for the group.
    for (const delivered of frame.messages) {
      this.#batcher.add({
        action: 'release',
        receiptHandle: delivered.receiptHandle,
        messageId: delivered.messageId,
        sessionId,
        creditTo: undefined,
      });
    }
    if (!known) this.#stopStray(sessionId, frame.subscriptionId);
  }

  /**
   * Unsubscribe a subscription this consumer does not know, such as one opened by a `subscribe`
   * whose answer timed out: it would keep delivering messages that are only released again.
   */
  #stopStray(sessionId: string, subscriptionId: number): void {
    const key = `${sessionId}/${subscriptionId}`;
    if (this.#strays.has(key)) return;
    this.#strays.add(key);
    this.#connection.request({ type: 'unsubscribe', subscriptionId }).catch(() => {});
  }

  #onOutcome(delivery: Delivery, outcome: ConsumeOutcome): void {
    const { message, subscription } = delivery;
    // C2: the broker released the deliveries of an ended session; a result would be refused (410).
    if (subscription.sessionId !== this.#liveSessionId()) return;
    const receiptHandle = receiptHandleOf(message);
    const { messageId } = message;
    const { sessionId } = subscription;
    if (outcome.type === 'ack') {
      this.#batcher.add({ action: 'ack', receiptHandle, messageId, sessionId, creditTo: subscription });
      return;
    }
    if (outcome.type === 'deadLetter') {
      const { reason } = outcome;
      const base = {
        action: 'nack',
        receiptHandle,
        deadLetter: true,
        messageId,
        sessionId,
        creditTo: subscription,
      } as const;
      this.#batcher.add(reason === undefined ? base : { ...base, reason });
      return;
    }
    const { reason, retryAfterMs } = outcome;
    this.#batcher.add(
      retryAfterMs === undefined
        ? { action: 'nack', receiptHandle, reason, messageId, sessionId, creditTo: subscription }
        : {
            action: 'nack',
            receiptHandle,
            reason,
            retryAfterMs,
            messageId,
            sessionId,
            creditTo: subscription,
          },
    );
  }

  /**
   * A result frame is on its way: its messages leave the cache, so their credit goes back right
   * behind it. The broker reads the results before the credit on the same connection, so it never
   * counts more unsettled deliveries than the credit it was given, while the credit does not wait
   * for the results' durable commit. Refused results (410) are no longer the broker's either.
   */
  #onSent(results: readonly ResultEntry[]): void {
    const subscription = this.#subscription;
    if (!subscription?.active || subscription.sessionId !== this.#liveSessionId()) return;
    let credits = 0;
    for (const result of results) if (result.creditTo === subscription) credits += 1;
    if (credits > 0)
      this.#connection.sendOneWay({ type: 'credit', subscriptionId: subscription.id, credits });
  }

  /** The broker answered a result frame (or it failed): report what it refused. */
  #onSettled(results: readonly ResultEntry[], outcome: BatchOutcome): void {
    if ('failures' in outcome) {
      for (const failure of outcome.failures) {
        const result = results[failure.index];
        const messageId = result?.messageId ?? 'unknown';
        this.#report(
          new BrokerError(
            failure.code,
            `the broker refused the ${result?.action ?? 'result'} of message ${messageId}: ${failure.message}`,
            { details: { messageId } },
          ),
        );
      }
      return;
    }
    const error = toRicochetError(outcome.error, 'the request');
    // A dropped connection loses nothing: the broker released those deliveries (C2).
    if (error.code === 'CONNECTION_CLOSED' || error.code === 'CLIENT_CLOSED') return;
    this.#report(error);
  }

  async #unsubscribe(): Promise<void> {
    const subscription = this.#subscription;
    if (subscription === undefined || !subscription.active) return;
    subscription.active = false;
    if (subscription.sessionId !== this.#liveSessionId()) return;
    try {
      await this.#connection.request({ type: 'unsubscribe', subscriptionId: subscription.id });
    } catch (thrown) {
      const error = toRicochetError(thrown, 'the request');
      if (error.code !== 'CONNECTION_CLOSED' && error.code !== 'CLIENT_CLOSED') this.#report(error);
    }
  }

  /** Hand every cached, unstarted message back to the broker: Ready again, no failure counted (C2). */
  #releaseCached(): void {
    for (const { message, subscription } of this.#pool.takeCached()) {
      this.#batcher.add({
        action: 'release',
        receiptHandle: receiptHandleOf(message),
        messageId: message.messageId,
        sessionId: subscription.sessionId,
        creditTo: undefined,
      });
    }
    this.#batcher.flush();
  }

  #report(error: RicochetError): void {
    try {
      this.#options.onError(error);
    } catch {
      // A throwing hook must not break the consumer's own bookkeeping.
    }
  }
}

function closedError(): ClientError {
  return new ClientError('CLIENT_CLOSED', 'the consumer is closed');
}
