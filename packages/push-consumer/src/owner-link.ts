import {
  Connection,
  type ConnectionOptions,
  drainWithTimeout,
  ReceivedMessage,
  receiptHandleOf,
  toRicochetError,
} from '@ricochet/client';
import { ExponentialBackoff } from '@ricochet/core';
import {
  BrokerError,
  CREDIT_LENDING_FEATURE,
  type DeliverFrame,
  OWNED_SUBSCRIPTIONS_FEATURE,
  type RicochetError,
} from '@ricochet/protocol';
import type { CreditLoans } from './credit-loans.js';
import { type Delivery, problemsOf, type ResultEntry, releaseOf } from './delivery-results.js';
import { FlowControl } from './flow-control.js';
import type { DeliveryRoute, PendingSubscribe, Subscription } from './push-consumer-lifecycle.js';
import {
  MAX_RESULTS_PER_FRAME,
  RESULT_FLUSH_DELAY_MS,
  RESULT_FLUSH_TIMEOUT_MS,
  type ResolvedPushConsumerOptions,
} from './push-consumer-options.js';
import { ResultBatcher } from './result-batcher.js';

/** What an {@link OwnerLink} shares with its consumer. */
export interface OwnerLinkDeps {
  readonly options: ResolvedPushConsumerOptions;
  /** The consumer's connection options; the link's session takes them with the owner's endpoint. */
  readonly connection: ConnectionOptions;
  /** Its share of `maxCachedMessages` and `maxCachedBytes` now. */
  readonly share: () => { readonly messages: number; readonly bytes: number };
  /** Whether deliveries go to the listeners now (the consumer runs). */
  readonly running: () => boolean;
  /** Hand deliveries to the consumer's listeners. */
  readonly add: (deliveries: Delivery[]) => void;
  /** Take the cached, unstarted deliveries that `filter` picks out of the listeners' cache. */
  readonly takeCached: (filter: (delivery: Delivery) => boolean) => Delivery[];
  /** How many cached messages could start as soon as a listener is free. */
  readonly startableCount: () => number;
  readonly report: (error: RicochetError) => void;
  /** The session is gone for good (its first connect failed): the link is to be made again. */
  readonly onLost: () => void;
  /** The link's first subscription was answered: the owner delivers from its queues now. */
  readonly onFirstSubscribed: () => void;
  /** Paces connect attempts; shared with the consumer's own connection. */
  readonly reconnectBackoff: ConstructorParameters<typeof ExponentialBackoff>[0];
  /** The consumer's credit as one pool, lent to owned-scope subscriptions granted `creditLending`. */
  readonly loans: CreditLoans<FlowControl>;
}

/**
 * A push consumer's session with one queue owner other than its `endpoint` broker, and its
 * owned-scope subscription there (docs/protocol/README.md#owned-subscriptions): the owner delivers
 * from the queues it owns, following them as they move, and the results of those deliveries go
 * back on this session ({@link DeliveryRoute}). Its credit is its share of the consumer's
 * `maxCachedMessages` ({@link resize}); its deliveries wait in the consumer's one listener cache.
 *
 * The session reconnects by itself (C1) and the link subscribes again on each new one; what the
 * lost session delivered was released by the owner (C2), so its cached deliveries are dropped.
 * An owner that does not grant `ownedSubscriptions` (a rolling upgrade) is subscribed on without a
 * scope: it delivers from every queue, forwarding, which is correct if not cheap.
 */
export class OwnerLink implements DeliveryRoute {
  readonly endpoint: string;
  readonly #deps: OwnerLinkDeps;
  readonly #connection: Connection;
  readonly #flow: FlowControl;
  readonly #batcher: ResultBatcher<ResultEntry>;
  readonly #backoff: ExponentialBackoff;
  readonly #stopListening: (() => void)[];
  #subscription: Subscription | undefined;
  #pending: PendingSubscribe | undefined;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** `sessionId/subscriptionId` of stray subscriptions already asked to stop. */
  readonly #strays = new Set<string>();
  #stopped = false;
  /** Whether a subscription of this link was ever answered ({@link subscribedOnce}). */
  #subscribedOnce = false;

  /** @throws ClientError `400` when `endpoint` is not one this client can open (the caller skips it). */
  constructor(endpoint: string, deps: OwnerLinkDeps) {
    this.endpoint = endpoint;
    this.#deps = deps;
    const { features: _, ...options } = deps.connection;
    this.#connection = new Connection({
      ...options,
      endpoint,
      requireStream: true,
      features: [OWNED_SUBSCRIPTIONS_FEATURE, CREDIT_LENDING_FEATURE],
    });
    this.#backoff = new ExponentialBackoff(deps.reconnectBackoff);
    this.#flow = new FlowControl({
      maxCachedMessages: deps.share().messages,
      concurrency: deps.options.concurrency,
      creditable: () => {
        const live = this.#subscription;
        return live?.active && live.sessionId === this.liveSessionId() ? live : undefined;
      },
      startableCount: deps.startableCount,
      send: (frame) => this.#connection.sendOneWay(frame),
      loans: deps.loans,
    });
    this.#batcher = new ResultBatcher<ResultEntry>({
      flushDelayMs: RESULT_FLUSH_DELAY_MS,
      maxBatchSize: MAX_RESULTS_PER_FRAME,
      send: (frame) => this.#connection.request(frame),
      isSendable: (result) => result.sessionId === this.liveSessionId(),
      onSent: (results) => this.#flow.sent(results),
      onSettled: (results, outcome) => {
        for (const problem of problemsOf(results, outcome)) deps.report(problem);
      },
    });
    this.#stopListening = [
      this.#connection.onFrame('deliver', (frame) => this.#onDeliver(frame)),
      this.#connection.onFrame('creditWanted', (frame) => this.#flow.wanted(frame)),
      this.#connection.onFrame('creditReturned', (frame) => this.#flow.returned(frame)),
      this.#connection.onFrame('error', (frame) => deps.report(BrokerError.fromFrame(frame))),
      this.#connection.onReconnected(() => this.#onReconnected()),
    ];
  }

  /** The link's side of the consumer's credit. */
  get flow(): FlowControl {
    return this.#flow;
  }

  /** Whether the session is gone for good (its first connect timed out, or the link stopped). */
  get closed(): boolean {
    return this.#connection.currentStatus.state === 'closed';
  }

  /**
   * Whether the owner ever answered this link's subscription: from then on it delivers from its
   * queues (again after each reconnect, C1), so the consumer's own subscription may leave them.
   */
  get subscribedOnce(): boolean {
    return this.#subscribedOnce;
  }

  liveSessionId(): string | undefined {
    const status = this.#connection.currentStatus;
    return status.state === 'connected' ? status.sessionId : undefined;
  }

  addResult(result: ResultEntry): void {
    this.#batcher.add(result);
  }

  /** Connect and subscribe; failures are reported, and the session keeps reconnecting (C1). */
  open(): void {
    this.#connection.connect().then(
      () => this.#subscribe(),
      (error: unknown) => {
        if (this.#stopped) return;
        this.#deps.report(toRicochetError(error, 'connecting to a queue owner'));
        this.#deps.onLost();
      },
    );
  }

  /** The link's share of `maxCachedMessages` changed (another number of owners). */
  resize(maxCachedMessages: number): void {
    this.#flow.resize(maxCachedMessages);
  }

  /** The listeners ran out of work: perhaps this link's window is what they wait for. */
  starved(): void {
    this.#flow.starved();
  }

  /**
   * Stop deliveries (`unsubscribe`); its later deliveries are released. The session stays open
   * for the results of what the listeners hold.
   */
  async unsubscribe(): Promise<void> {
    this.#stopped = true;
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    await drainWithTimeout(this.#pending?.settled ?? Promise.resolve(), this.#deps.options.closeTimeoutMs);
    const subscription = this.#subscription;
    this.#flow.ended();
    if (subscription === undefined || !subscription.active) return;
    subscription.active = false;
    if (subscription.sessionId !== this.liveSessionId()) return;
    await this.#request({ type: 'unsubscribe', subscriptionId: subscription.id });
  }

  /** Hand the link's cached, unstarted deliveries back to its owner: Ready again, no failure (C2). */
  releaseCached(): void {
    for (const { message, subscription } of this.#deps.takeCached(
      (delivery) => delivery.subscription.route === this,
    )) {
      this.#batcher.add(releaseOf(receiptHandleOf(message), message.messageId, subscription.sessionId));
    }
    this.#batcher.flush();
  }

  /** Send the results queued, wait up to {@link RESULT_FLUSH_TIMEOUT_MS} for their answers, and close the session. */
  async close(): Promise<void> {
    this.#stopped = true;
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    this.#batcher.flush();
    await drainWithTimeout(this.#batcher.idle(), RESULT_FLUSH_TIMEOUT_MS);
    this.#batcher.close();
    for (const stop of this.#stopListening) stop();
    await this.#connection.close({ drainTimeoutMs: 0 });
  }

  /** Stop for good when the map no longer names the owner: unsubscribe, release, close. */
  async retire(): Promise<void> {
    await this.unsubscribe();
    this.releaseCached();
    await this.close();
  }

  #subscribe(): void {
    const sessionId = this.liveSessionId();
    if (sessionId === undefined || this.#stopped) return;
    if (this.#subscription?.sessionId === sessionId || this.#pending?.sessionId === sessionId) return;
    const features = this.#connection.session?.features ?? [];
    const granted = features.includes(OWNED_SUBSCRIPTIONS_FEATURE);
    // An owned-scope subscription on a session granted creditLending borrows the consumer's credit.
    const borrow = granted && features.includes(CREDIT_LENDING_FEATURE);
    const pending: PendingSubscribe = { sessionId, stash: [], settled: Promise.resolve() };
    this.#pending = pending;
    const share = this.#deps.share();
    pending.settled = this.#connection
      .request({
        type: 'subscribe',
        group: this.#deps.options.group,
        subscriptions: this.#deps.options.subscriptions,
        maxCachedMessages: this.#flow.subscribing(borrow),
        maxCachedBytes: share.bytes,
        ...(granted ? { scope: 'owned' as const } : {}),
      })
      .then(
        (answer) => this.#onSubscribed(pending, answer.subscriptionId),
        (error: unknown) => this.#onSubscribeFailed(pending, toRicochetError(error, 'the request')),
      );
  }

  #onSubscribed(pending: PendingSubscribe, subscriptionId: number): void {
    if (this.#pending === pending) this.#pending = undefined;
    const subscription: Subscription = {
      id: subscriptionId,
      sessionId: pending.sessionId,
      active: pending.sessionId === this.liveSessionId() && !this.#stopped,
      route: this,
    };
    this.#subscription = subscription;
    if (subscription.active) this.#backoff.reset();
    this.#flow.subscribed();
    // Deliveries can arrive in the same read as `subscribed`, before this ran.
    for (const frame of pending.stash) this.#onDeliver(frame);
    if (subscription.active && !this.#subscribedOnce) {
      this.#subscribedOnce = true;
      this.#deps.onFirstSubscribed();
    }
  }

  #onSubscribeFailed(pending: PendingSubscribe, error: RicochetError): void {
    if (this.#pending === pending) this.#pending = undefined;
    this.#flow.ended();
    for (const frame of pending.stash) this.#onDeliver(frame);
    // The session ended first: the reconnect hook subscribes again on the next one (C1).
    if (this.#stopped || error.code === 'CONNECTION_CLOSED' || error.code === 'CLIENT_CLOSED') return;
    this.#deps.report(error);
    if (!error.retryable) return;
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#subscribe();
    }, this.#backoff.nextDelayMs());
  }

  #onReconnected(): void {
    const sessionId = this.liveSessionId();
    if (this.#subscription !== undefined && this.#subscription.sessionId !== sessionId) {
      this.#subscription.active = false;
      // What the owner held and delivered on the lost session was released (C2): the pool's again.
      this.#flow.ended();
    }
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    this.#strays.clear();
    // Their handles died with the old session: the owner released them (C2) and delivers them again.
    this.#deps.takeCached(
      (delivery) => delivery.subscription.route === this && delivery.subscription.sessionId !== sessionId,
    );
    this.#backoff.reset();
    this.#subscribe();
  }

  #onDeliver(frame: DeliverFrame): void {
    const sessionId = this.liveSessionId();
    if (sessionId === undefined) return;
    const subscription = this.#subscription;
    const known =
      subscription !== undefined &&
      subscription.sessionId === sessionId &&
      subscription.id === frame.subscriptionId;
    if (known && subscription.active && this.#deps.running()) {
      this.#flow.delivered(frame.messages.length);
      this.#deps.add(
        frame.messages.map((delivered) => ({ message: new ReceivedMessage(delivered), subscription })),
      );
      return;
    }
    if (!known && this.#pending?.sessionId === sessionId) {
      this.#pending.stash.push(frame);
      return;
    }
    // Not for a live subscription of this link: hand the messages back at once (frames.md).
    for (const delivered of frame.messages) {
      this.#batcher.add(releaseOf(delivered.receiptHandle, delivered.messageId, sessionId));
    }
    if (!known) {
      const key = `${sessionId}/${frame.subscriptionId}`;
      if (this.#strays.has(key)) return;
      this.#strays.add(key);
      void this.#request({ type: 'unsubscribe', subscriptionId: frame.subscriptionId });
    }
  }

  /** A request whose answer carries nothing; a failure other than a closed session is reported. */
  async #request(frame: { readonly type: 'unsubscribe'; readonly subscriptionId: number }): Promise<void> {
    try {
      await this.#connection.request(frame);
    } catch (thrown) {
      const error = toRicochetError(thrown, 'the request');
      if (error.code !== 'CONNECTION_CLOSED' && error.code !== 'CLIENT_CLOSED') this.#deps.report(error);
    }
  }
}
