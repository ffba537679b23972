import { assertNever } from '@ricochet/core';
import type { DeliverFrame } from '@ricochet/protocol';
import type { ResultEntry } from './delivery-results.js';

/**
 * Where the deliveries of a subscription on another queue owner's session go back to
 * (`owner-links.ts`): that session, never the consumer's own.
 */
export interface DeliveryRoute {
  /** The id of the route's session while it is open. */
  liveSessionId(): string | undefined;
  /** Queue the result of one of its deliveries, to be sent on its session. */
  addResult(result: ResultEntry): void;
}

/** One subscription, valid on the session that opened it only (subscription ids are per session). */
export interface Subscription {
  readonly id: number;
  readonly sessionId: string;
  /** False once unsubscribed, or once its session ended; deliveries and results hold it too. */
  active: boolean;
  /** Made on a session with another queue owner (owned scope); absent on the consumer's own session. */
  readonly route?: DeliveryRoute;
  /** `owned`: it delivers from its broker's queues only (`subscribe.scope`); else from every queue. */
  readonly scope?: 'owned' | undefined;
}

/** A `subscribe` on the wire, and the deliveries that arrived before its answer. */
export interface PendingSubscribe {
  readonly sessionId: string;
  /** The `scope` it asked for. */
  readonly scope?: 'owned' | undefined;
  readonly stash: DeliverFrame[];
  /** Settles once the answer (or the failure) has been handled. */
  settled: Promise<void>;
}

/** A promise and the functions that settle it. */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  readonly resolve: (value: T) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * What a started consumer has on the current session; `state` discriminates.
 *
 * - `none`: neither a subscription nor a `subscribe` on the wire: before the first subscribe, after
 *   a refused one, or after a reconnect until its `subscribe` goes out.
 * - `subscribing`: a `subscribe` is on the wire on `pending.sessionId`.
 * - `subscribed`: `subscription` was opened on its session. It stays here, `active` false, once
 *   unsubscribed or once its session dropped (until the reconnect hook runs), so that its late
 *   deliveries are still recognised as its own.
 * - `retrying`: after a reconnect the broker refused the `subscribe` with a retryable code; `timer`
 *   subscribes again after the resubscribe backoff.
 */
export type SubscriptionState =
  | { readonly state: 'none' }
  | { readonly state: 'subscribing'; readonly pending: PendingSubscribe }
  | { readonly state: 'subscribed'; readonly subscription: Subscription }
  | { readonly state: 'retrying'; readonly timer: ReturnType<typeof setTimeout> };

/**
 * Where a push consumer stands, all in one value; `state` discriminates. Only the named transitions
 * of {@link PushConsumerLifecycle} replace it:
 *
 * ```text
 * idle ──start()──▶ starting ──subscribed──▶ running
 *  ▲                   │ connect or subscribe refused
 *  └───────────────────┘
 * idle, starting, running ──close()──▶ closing ──connection closed──▶ closed
 * ```
 *
 * - `idle`: constructed, or the last `start()` failed; `start()` may be called (again).
 * - `starting`: connecting, then subscribing. `subscribed` settles with the first subscription's
 *   answer (or is rejected by `close()`); `started` is what `start()` callers wait for.
 * - `running`: deliveries go to the listeners. A dropped connection does not leave it: the
 *   consumer subscribes again on the next session (C1), and `subscription` says how far it got.
 * - `closing`: `close()` was called: no listener starts any more, the subscription is stopped,
 *   cached messages go back to the broker, running listeners get `closeTimeoutMs` to finish.
 * - `closed`: final; the connection is closed.
 *
 * @see DESIGN.md §3 C1, C2
 */
export type PushConsumerState =
  | { readonly state: 'idle' }
  | {
      readonly state: 'starting';
      readonly subscribed: Deferred<void>;
      readonly started: Promise<void>;
      readonly subscription: SubscriptionState;
    }
  | { readonly state: 'running'; readonly subscription: SubscriptionState }
  | { readonly state: 'closing'; readonly closed: Promise<void>; readonly subscription: SubscriptionState }
  | { readonly state: 'closed'; readonly closed: Promise<void> };

const IDLE: PushConsumerState = { state: 'idle' };

const NO_SUBSCRIPTION: SubscriptionState = { state: 'none' };

/**
 * The push consumer's {@link PushConsumerState}, and the only code that changes it: one named
 * transition per event. The consumer does the I/O and calls the transition that fits what
 * happened; the rules of what may follow what live here, together.
 */
export class PushConsumerLifecycle {
  #state: PushConsumerState = IDLE;

  /** Where the consumer stands. */
  get state(): PushConsumerState {
    return this.#state;
  }

  /** The subscription side of the state: `none` when idle or closed, which have none. */
  get subscriptionState(): SubscriptionState {
    const state = this.#state;
    return state.state === 'idle' || state.state === 'closed' ? NO_SUBSCRIPTION : state.subscription;
  }

  /** The subscription of the current session (or, until the reconnect hook runs, the last), live or not. */
  get subscription(): Subscription | undefined {
    const side = this.subscriptionState;
    return side.state === 'subscribed' ? side.subscription : undefined;
  }

  /** The `subscribe` on the wire, if any. */
  get pendingSubscribe(): PendingSubscribe | undefined {
    const side = this.subscriptionState;
    return side.state === 'subscribing' ? side.pending : undefined;
  }

  /** Whether the consumer subscribes now: while starting and running, not before or after. */
  get subscribes(): boolean {
    return this.#state.state === 'starting' || this.#state.state === 'running';
  }

  /**
   * idle → starting.
   * @returns `subscribed`, which settles with the first subscription's answer (or with `close()`),
   *   and `started`, to settle with the whole start; `start()` callers share its promise.
   */
  begin(): { readonly subscribed: Promise<void>; readonly started: Deferred<void> } {
    if (this.#state.state !== 'idle') throw new Error(`begin() while ${this.#state.state}`);
    const subscribed = deferred<void>();
    // Rejected by close() while connect() may still be pending; the start's flow observes it later.
    subscribed.promise.catch(() => {});
    const started = deferred<void>();
    this.#state = { state: 'starting', subscribed, started: started.promise, subscription: NO_SUBSCRIPTION };
    return { subscribed: subscribed.promise, started };
  }

  /** starting → idle: the start failed and may be tried again. After `close()` it stays closing. */
  startFailed(): void {
    if (this.#state.state === 'starting') this.#state = IDLE;
  }

  /** A `subscribe` went out: → subscribing. */
  subscribing(pending: PendingSubscribe): void {
    this.#setSubscriptionState({ state: 'subscribing', pending });
  }

  /** The broker opened `subscription`: → subscribed; a starting consumer is running now. */
  subscribed(subscription: Subscription): void {
    this.#setSubscriptionState({ state: 'subscribed', subscription });
    const state = this.#state;
    if (state.state !== 'starting') return;
    this.#state = { state: 'running', subscription: state.subscription };
    state.subscribed.resolve();
  }

  /**
   * `subscription` is to be made again in another scope (its owner links changed, see
   * `owner-links.ts`): it stops (`active` false, its late deliveries released), subscribed → none.
   */
  rescoped(subscription: Subscription): void {
    if (this.subscription !== subscription) return;
    subscription.active = false;
    this.#setSubscriptionState(NO_SUBSCRIPTION);
  }

  /** `pending` came to nothing (refused, or its session ended): subscribing → none. */
  subscribeEnded(pending: PendingSubscribe): void {
    if (this.pendingSubscribe === pending) this.#setSubscriptionState(NO_SUBSCRIPTION);
  }

  /**
   * The first subscribe of a start was refused: the start fails with `error`.
   * @returns false when not starting: the refusal is the caller's to handle.
   */
  failStart(error: unknown): boolean {
    const state = this.#state;
    if (state.state !== 'starting') return false;
    state.subscribed.reject(error);
    return true;
  }

  /** A subscribe after a reconnect was refused with a retryable code: → retrying, until `timer`. */
  retrying(timer: ReturnType<typeof setTimeout>): void {
    const side = this.subscriptionState;
    if (side.state === 'retrying') clearTimeout(side.timer);
    this.#setSubscriptionState({ state: 'retrying', timer });
  }

  /** `timer` fired: retrying → none, so the consumer may subscribe again. */
  retryDue(timer: ReturnType<typeof setTimeout>): void {
    const side = this.subscriptionState;
    if (side.state === 'retrying' && side.timer === timer) this.#setSubscriptionState(NO_SUBSCRIPTION);
  }

  /**
   * A new session `sessionId` opened after a dropped one (C1): the last session's subscription
   * ended with it, and a retry planned on it is off. → none.
   */
  reconnected(sessionId: string | undefined): void {
    const side = this.subscriptionState;
    if (side.state === 'subscribed' && side.subscription.sessionId !== sessionId) {
      side.subscription.active = false;
      this.#setSubscriptionState(NO_SUBSCRIPTION);
    }
    if (side.state === 'retrying') {
      clearTimeout(side.timer);
      this.#setSubscriptionState(NO_SUBSCRIPTION);
    }
  }

  /**
   * idle, starting or running → closing: a start still waiting fails with `closedError`, a planned
   * retry is off. The subscription side stays, for the consumer to stop.
   * @param closed - settles when closing is done.
   */
  close(closed: Promise<void>, closedError: unknown): void {
    const state = this.#state;
    if (state.state === 'closing' || state.state === 'closed')
      throw new Error(`close() while ${state.state}`);
    let subscription = this.subscriptionState;
    if (subscription.state === 'retrying') {
      clearTimeout(subscription.timer);
      subscription = NO_SUBSCRIPTION;
    }
    this.#state = { state: 'closing', closed, subscription };
    if (state.state === 'starting') state.subscribed.reject(closedError);
  }

  /** closing → closed. */
  finishClosing(): void {
    const state = this.#state;
    if (state.state === 'closing') this.#state = { state: 'closed', closed: state.closed };
  }

  #setSubscriptionState(subscription: SubscriptionState): void {
    const state = this.#state;
    switch (state.state) {
      case 'starting':
      case 'running':
      case 'closing':
        this.#state = { ...state, subscription };
        return;
      case 'idle':
      case 'closed':
        // Nothing is subscribed before a start or after a close; a late answer changes nothing.
        return;
      default:
        assertNever(state, 'push consumer state');
    }
  }
}

/** A new {@link Deferred}. */
export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
