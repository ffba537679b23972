import {
  type CallOptions,
  type ClientCloseOptions,
  ClientError,
  Connection,
  type ConnectionStatus,
  connectionOptionsOf,
  DEFAULT_REQUEST_TIMEOUT_MS,
  drainWithTimeout,
  loadTracing,
  ReceivedMessage,
  receiptHandleOf,
  startProcessSpan,
  toRicochetError,
  untilAborted,
} from '@ricochet/client';
import { ExponentialBackoff } from '@ricochet/core';
import {
  BrokerError,
  CREDIT_LENDING_FEATURE,
  type DeliverFrame,
  OWNED_SUBSCRIPTIONS_FEATURE,
  QUEUE_MAP_FEATURE,
  type RicochetError,
} from '@ricochet/protocol';
import { CreditLoans } from './credit-loans.js';
import { type Delivery, problemsOf, type ResultEntry, releaseOf, resultOf } from './delivery-results.js';
import { FlowControl } from './flow-control.js';
import { ListenerPool } from './listener-pool.js';
import { OwnerLinks } from './owner-links.js';
import {
  deferred,
  type PendingSubscribe,
  PushConsumerLifecycle,
  type Subscription,
} from './push-consumer-lifecycle.js';
import {
  checkCloseTimeoutMs,
  MAX_RESULTS_PER_FRAME,
  type PushConsumerOptions,
  RESULT_FLUSH_DELAY_MS,
  RESULT_FLUSH_TIMEOUT_MS,
  type ResolvedPushConsumerOptions,
  resolvePushConsumerOptions,
} from './push-consumer-options.js';
import { ResultBatcher } from './result-batcher.js';

/**
 * A consumer the broker pushes messages to, as RocketMQ 5's PushConsumer: each delivered message
 * goes to `listener`, and its result settles the delivery — `SUCCESS` commits it, `FAILURE`, a
 * throw or a listener that outlives `consumptionTimeoutMs` fails it (retried after the group's
 * delay, P3, or dead-lettered after `maxRetries`, P4), `retryAfter(ms)` fails it with its own delay.
 *
 * Flow control: the broker never has more unsettled deliveries out to this consumer than
 * `maxCachedMessages`; deliveries wait in a local cache until one of `concurrency` listeners is
 * free, and messages with the same `messageGroup` (the FIFO key) are processed one at a time, in
 * order (P5). A redelivery (`deliveryAttempt` > 1) starts before the first deliveries waiting in
 * the cache, so a retry never waits behind a full cache of them; within a message group, arrival
 * order still rules. Results travel in batches; each batch sent gives credit back, up to an
 * adaptive window from twice `concurrency` to `maxCachedMessages` (docs/semantics.md, P1): the
 * cache stays short while the listeners are the bottleneck, and grows when they wait for the broker.
 *
 * After a reconnect the consumer subscribes again (C1). The broker released the deliveries of
 * the lost session (C2) and delivers them again, so the cached messages of that session are
 * dropped unprocessed and results of listeners still running for it are not sent.
 *
 * Against brokers that spread their queues (unless `routeToOwners` is false), it also subscribes on
 * every other queue owner with the owned scope, and its own subscription takes its broker's queues
 * only (`owner-links.ts`); each delivery's result goes back on the session that delivered it.
 *
 * Its lifecycle (idle, starting, running, closing, closed) and what it has subscribed on the
 * current session are one value, kept by {@link PushConsumerLifecycle}: this class does the I/O
 * and tells the lifecycle what happened.
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
  readonly #flow: FlowControl;
  /** The consumer's credit, lent to its owned-scope subscriptions on owners that grant `creditLending`. */
  readonly #loans: CreditLoans<FlowControl>;
  /** Paces attempts to subscribe again on one session after a retryable refusal. */
  readonly #resubscribeBackoff: ExponentialBackoff;
  readonly #lifecycle = new PushConsumerLifecycle();
  /** `sessionId/subscriptionId` of stray subscriptions already asked to stop, so each is asked once. */
  readonly #strays = new Set<string>();
  /** With `routeToOwners`: a session and an owned-scope subscription per other queue owner. */
  readonly #owners: OwnerLinks | undefined;
  /**
   * Own subscriptions made again in another scope whose `unsubscribe` is not answered yet: what
   * their broker delivered before it read the `unsubscribe` is still this consumer's to process.
   */
  readonly #rescoping = new Set<Subscription>();

  /**
   * @throws ClientError `400` when the group, a subscription or an option is invalid, or an
   *   endpoint (any entry of a list) is not a stream (request/response HTTP).
   */
  constructor(options: PushConsumerOptions) {
    this.#options = resolvePushConsumerOptions(options);
    const connectionOptions = connectionOptionsOf(
      options,
      options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    );
    // Deliveries come unasked: push needs a stream, never a request/response link.
    this.#connection = new Connection({
      ...connectionOptions,
      requireStream: true,
      ...(this.#options.routeToOwners
        ? { features: [QUEUE_MAP_FEATURE, OWNED_SUBSCRIPTIONS_FEATURE, CREDIT_LENDING_FEATURE] }
        : {}),
    });
    this.#resubscribeBackoff = new ExponentialBackoff(options.reconnectBackoff);
    this.#loans = new CreditLoans<FlowControl>({
      capacity: () => this.#loanCapacity(),
      // As one subscription's window: every listener busy, and as many messages on their way.
      floor: 2 * this.#options.concurrency,
      outstanding: () =>
        this.#pool.runningCount +
        this.#pool.cachedCount +
        this.#flows().reduce((sum, flow) => sum + flow.unspentCredit, 0),
      lend: (flow, credits) => flow.lend(credits),
    });
    this.#flow = new FlowControl({
      ...this.#options, // maxCachedMessages, concurrency
      creditable: () => {
        const live = this.#lifecycle.subscription;
        return live?.active && live.sessionId === this.#liveSessionId() ? live : undefined;
      },
      startableCount: () => this.#pool.startableCount,
      send: (frame) => this.#connection.sendOneWay(frame),
      loans: this.#loans,
    });
    this.#pool = new ListenerPool<Delivery>({
      ...this.#options, // listener, concurrency, consumptionTimeoutMs, clock, isNonRetryable, onListenerError
      // A delivery of an ended session has a dead receipt handle: the broker released it (C2).
      isLive: (delivery) => this.#isLive(delivery),
      onOutcome: (delivery, outcome) => {
        // C2: the broker released the deliveries of an ended session; a result would be refused (410).
        if (this.#isLive(delivery)) this.#addResult(delivery, resultOf(delivery, outcome));
      },
      startSpan: (message) => startProcessSpan(message, this.#options.group),
      onStarved: () => {
        this.#loans.starved();
        this.#flow.starved();
        this.#owners?.starved();
      },
    });
    this.#batcher = new ResultBatcher<ResultEntry>({
      flushDelayMs: RESULT_FLUSH_DELAY_MS,
      maxBatchSize: MAX_RESULTS_PER_FRAME,
      send: (frame) => this.#connection.request(frame),
      // Checked again at send time: the session may have ended since the result was queued, and a
      // queued request would otherwise be written to the next session.
      isSendable: (result) => result.sessionId === this.#liveSessionId(),
      onSent: (results) => this.#flow.sent(results),
      onSettled: (results, outcome) => {
        for (const problem of problemsOf(results, outcome)) this.#report(problem);
      },
    });
    this.#connection.onFrame('deliver', (frame) => this.#onDeliver(frame));
    this.#connection.onFrame('creditWanted', (frame) => this.#flow.wanted(frame));
    this.#connection.onFrame('creditReturned', (frame) => this.#flow.returned(frame));
    this.#connection.onFrame('error', (frame) => this.#report(BrokerError.fromFrame(frame)));
    this.#connection.onReconnected(() => this.#onReconnected());
    this.#owners = this.#options.routeToOwners
      ? new OwnerLinks(this.#connection, {
          options: this.#options,
          connection: connectionOptions,
          running: () => this.#lifecycle.state.state === 'running',
          add: (deliveries) => this.#pool.add(deliveries),
          takeCached: (filter) => this.#pool.takeCached(filter),
          startableCount: () => this.#pool.startableCount,
          report: (error) => this.#report(error),
          reconnectBackoff: options.reconnectBackoff,
          loans: this.#loans,
          onChange: () => this.#ownersChanged(),
        })
      : undefined;
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
  start(options: CallOptions = {}): Promise<void> {
    const current = this.#lifecycle.state;
    if (current.state === 'closing' || current.state === 'closed') return Promise.reject(closedError());
    const started =
      current.state === 'running'
        ? Promise.resolve()
        : current.state === 'starting'
          ? current.started
          : this.#begin();
    return untilAborted(started, options.signal, 'waiting for start()');
  }

  /**
   * Stop gracefully: unsubscribe, hand every cached message not yet started back (`release`, C2),
   * wait up to `timeoutMs` for running listeners and send their results, then close the
   * connection. Listeners still running then are left behind (their `context.signal` aborted,
   * their results ignored) and the broker releases their deliveries (C2). Takes at most about
   * `timeoutMs` (the `unsubscribe` answer included), plus up to {@link RESULT_FLUSH_TIMEOUT_MS}
   * (5 s) for the broker to answer the last results. Idempotent, whatever a later call's options.
   *
   * @param options.timeoutMs - 0 – 2^31 − 1. @default the `closeTimeoutMs` option, else 10000 (ms)
   * @throws ClientError `400` (a rejected promise, before closing) for `timeoutMs` out of range.
   */
  close(options: ClientCloseOptions = {}): Promise<void> {
    const current = this.#lifecycle.state;
    if (current.state === 'closing' || current.state === 'closed') return current.closed;
    const timeoutMs = options.timeoutMs ?? this.#options.closeTimeoutMs;
    try {
      checkCloseTimeoutMs(timeoutMs, 'timeoutMs');
    } catch (error) {
      return Promise.reject(error);
    }
    const closed = deferred<void>();
    this.#lifecycle.close(closed.promise, closedError());
    this.#shutdown(timeoutMs).then(closed.resolve, closed.reject);
    return closed.promise;
  }

  /** Same as {@link close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Start: connect, subscribe, and wait for the first subscription's answer. */
  #begin(): Promise<void> {
    const { subscribed, started } = this.#lifecycle.begin();
    this.#connectAndSubscribe(subscribed).then(started.resolve, started.reject);
    return started.promise;
  }

  async #connectAndSubscribe(subscribed: Promise<void>): Promise<void> {
    try {
      await Promise.all([this.#connection.connect(), loadTracing()]); // deliveries come traced
      this.#subscribe();
      await subscribed;
    } catch (error) {
      this.#lifecycle.startFailed();
      throw error;
    }
  }

  /** Let go of everything the consumer holds, then the connection. */
  async #shutdown(timeoutMs: number): Promise<void> {
    this.#pool.stop();
    // One budget of timeoutMs for the three waits together.
    const deadlineMs = performance.now() + timeoutMs;
    const remainingMs = (): number => Math.max(0, deadlineMs - performance.now());
    // A subscribe on the wire may still open a subscription; wait for it, so it is stopped too.
    const subscribing = this.#lifecycle.pendingSubscribe?.settled ?? Promise.resolve();
    await drainWithTimeout(subscribing, remainingMs());
    // Deliveries stop before the cache is handed back, or the released messages could be
    // delivered straight back to this consumer.
    await drainWithTimeout(Promise.all([this.#unsubscribe(), this.#owners?.unsubscribe()]), remainingMs());
    this.#releaseCached();
    await drainWithTimeout(this.#pool.whenIdle(), remainingMs());
    // C2: the broker releases the deliveries of listeners still running once the connection closes.
    this.#pool.abandonRunning(
      new ClientError('CLIENT_CLOSED', 'the consumer closed before the listener finished'),
    );
    this.#batcher.flush();
    // Only the result frames are waited for: a subscribe or unsubscribe still unanswered has no
    // effect worth waiting for once the connection closes.
    await Promise.all([
      drainWithTimeout(this.#batcher.idle(), RESULT_FLUSH_TIMEOUT_MS),
      this.#owners?.close(),
    ]);
    this.#batcher.close();
    await this.#connection.close({ drainTimeoutMs: 0 });
    this.#lifecycle.finishClosing();
  }

  #liveSessionId(): string | undefined {
    const status = this.#connection.currentStatus;
    return status.state === 'connected' ? status.sessionId : undefined;
  }

  /** Subscribe on the current session, unless a subscription or a subscribe exists for it. */
  #subscribe(): void {
    const sessionId = this.#liveSessionId();
    // Without a session, the reconnect hook subscribes once there is one again.
    if (sessionId === undefined || !this.#lifecycle.subscribes) return;
    if (this.#lifecycle.subscription?.sessionId === sessionId) return;
    if (this.#lifecycle.pendingSubscribe?.sessionId === sessionId) return;
    const scope = this.#owners?.ownedScope === true ? ('owned' as const) : undefined;
    // Owned scope on a session granted creditLending: the subscription borrows the consumer's credit.
    const borrow =
      scope === 'owned' && this.#connection.session?.features.includes(CREDIT_LENDING_FEATURE) === true;
    const pending: PendingSubscribe = { sessionId, scope, stash: [], settled: Promise.resolve() };
    this.#lifecycle.subscribing(pending);
    // Written at once, on this session: the status is `connected`, so nothing is queued.
    pending.settled = this.#connection
      .request({
        type: 'subscribe',
        group: this.#options.group,
        subscriptions: this.#options.subscriptions,
        maxCachedMessages: this.#flow.subscribing(borrow),
        maxCachedBytes: this.#owners?.share().bytes ?? this.#options.maxCachedBytes,
        ...(scope === undefined ? {} : { scope }),
      })
      .then(
        (answer) => this.#onSubscribed(pending, answer.subscriptionId),
        (error: unknown) => this.#onSubscribeFailed(pending, toRicochetError(error, 'the request')),
      );
  }

  #onSubscribed(pending: PendingSubscribe, subscriptionId: number): void {
    const subscription: Subscription = {
      id: subscriptionId,
      sessionId: pending.sessionId,
      active: true,
      scope: pending.scope,
    };
    if (pending.sessionId !== this.#liveSessionId()) {
      // Its session is gone, and the subscription with it.
      subscription.active = false;
      this.#lifecycle.subscribeEnded(pending);
      return;
    }
    this.#lifecycle.subscribed(subscription);
    this.#resubscribeBackoff.reset();
    this.#flow.subscribed();
    // Deliveries can arrive in the same tick as `subscribed`, before this callback ran.
    for (const frame of pending.stash) this.#onDeliver(frame);
    // Running: the owners' subscriptions follow the map now; the scope may have changed meanwhile.
    this.#owners?.activate();
  }

  #onSubscribeFailed(pending: PendingSubscribe, error: RicochetError): void {
    this.#lifecycle.subscribeEnded(pending);
    this.#flow.ended();
    for (const frame of pending.stash) this.#onDeliver(frame);
    if (!this.#lifecycle.subscribes) return;
    // The session ended first: the reconnect hook subscribes again on the next one (C1).
    if (error.code === 'CONNECTION_CLOSED') return;
    // A start's first subscribe: the start fails with it (and the consumer is idle again).
    if (this.#lifecycle.failStart(error)) return;
    this.#report(error);
    if (!error.retryable) return;
    const timer = setTimeout(() => {
      this.#lifecycle.retryDue(timer);
      this.#subscribe();
    }, this.#resubscribeBackoff.nextDelayMs());
    this.#lifecycle.retrying(timer);
  }

  /** A new session opened after a dropped one (C1). */
  #onReconnected(): void {
    const sessionId = this.#liveSessionId();
    this.#lifecycle.reconnected(sessionId);
    this.#strays.clear();
    // What the lost session held and delivered was released (C2): a borrowed loan is the pool's again.
    this.#flow.ended();
    // Their receipt handles died with the old session: the broker released them (C2) and will
    // deliver them again, with new handles.
    this.#pool.takeCached(
      (delivery) =>
        delivery.subscription.route === undefined && delivery.subscription.sessionId !== sessionId,
    );
    this.#resubscribeBackoff.reset();
    this.#subscribe();
  }

  #onDeliver(frame: DeliverFrame): void {
    const sessionId = this.#liveSessionId();
    if (sessionId === undefined) return;
    const subscription = this.#lifecycle.subscription;
    const known =
      subscription !== undefined &&
      subscription.sessionId === sessionId &&
      subscription.id === frame.subscriptionId;
    if (known && subscription.active && this.#lifecycle.state.state === 'running') {
      this.#flow.delivered(frame.messages.length);
      this.#pool.add(
        frame.messages.map((delivered) => ({ message: new ReceivedMessage(delivered), subscription })),
      );
      return;
    }
    const rescoping = this.#rescopingOf(sessionId, frame.subscriptionId);
    if (rescoping !== undefined && this.#lifecycle.state.state === 'running') {
      // Written before the broker read the `unsubscribe`, on the session that is still open: its
      // handles live, so the messages are processed as if they had come a moment earlier, not
      // handed back (a `release` would show in their history, and on a spread store every
      // consumer's start moves its subscription so). Outside the window: the new subscription owns it.
      this.#pool.add(
        frame.messages.map((delivered) => ({
          message: new ReceivedMessage(delivered),
          subscription: rescoping,
        })),
      );
      return;
    }
    const pending = this.#lifecycle.pendingSubscribe;
    if (!known && pending?.sessionId === sessionId) {
      pending.stash.push(frame);
      return;
    }
    // Not for a live subscription (closing, or not ours): hand the messages back at once, as
    // docs/protocol/frames.md asks; they are Ready again for the group.
    for (const delivered of frame.messages) {
      this.#batcher.add(releaseOf(delivered.receiptHandle, delivered.messageId, sessionId));
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

  /** Stop the subscription (it stays known, inactive, so its late deliveries are released). */
  async #unsubscribe(): Promise<void> {
    const subscription = this.#lifecycle.subscription;
    this.#flow.ended();
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
    for (const delivery of this.#pool.takeCached()) {
      const { message, subscription } = delivery;
      this.#addResult(
        delivery,
        releaseOf(receiptHandleOf(message), message.messageId, subscription.sessionId),
      );
    }
    this.#batcher.flush();
  }

  /** Whether a delivery's receipt handle still lives: its session, the own one or an owner's, is the one open. */
  #isLive(delivery: Delivery): boolean {
    const { route, sessionId } = delivery.subscription;
    return sessionId === (route === undefined ? this.#liveSessionId() : route.liveSessionId());
  }

  /** A result goes back on the session that delivered (docs/protocol/README.md#owned-subscriptions). */
  #addResult(delivery: Delivery, result: ResultEntry): void {
    const { route } = delivery.subscription;
    if (route === undefined) this.#batcher.add(result);
    else route.addResult(result);
  }

  /** Every subscription's side of the credit: the own subscription's, then each owner link's. */
  #flows(): FlowControl[] {
    return [this.#flow, ...(this.#owners?.flows() ?? [])];
  }

  /**
   * The pool the borrowing subscriptions share: `maxCachedMessages`, less the share of each
   * subscription that does not borrow (an owner that does not grant `creditLending`).
   */
  #loanCapacity(): number {
    const keeping = this.#flows().filter((flow) => !flow.borrowing).length;
    const share = this.#owners?.share().messages ?? this.#options.maxCachedMessages;
    return this.#options.maxCachedMessages - keeping * share;
  }

  /**
   * The owner links changed: the own subscription's share of `maxCachedMessages` follows, and it
   * is made again when its scope should change (owned only while every other owner has a link).
   */
  #ownersChanged(): void {
    const owners = this.#owners;
    if (owners === undefined) return;
    this.#flow.resize(owners.share().messages);
    const subscription = this.#lifecycle.subscription;
    if (subscription?.active !== true || subscription.sessionId !== this.#liveSessionId()) return;
    if ((subscription.scope === 'owned') === owners.ownedScope) return;
    this.#lifecycle.rescoped(subscription);
    this.#rescoping.add(subscription);
    this.#connection
      .request({ type: 'unsubscribe', subscriptionId: subscription.id })
      .catch(() => {})
      // The broker answers after the last delivery it wrote for the subscription: any later is a stray.
      .finally(() => this.#rescoping.delete(subscription));
    this.#subscribe();
  }

  /** The subscription `subscriptionId` of `sessionId` being made again in another scope, if it is one. */
  #rescopingOf(sessionId: string, subscriptionId: number): Subscription | undefined {
    for (const subscription of this.#rescoping) {
      if (subscription.sessionId === sessionId && subscription.id === subscriptionId) return subscription;
    }
    return undefined;
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
