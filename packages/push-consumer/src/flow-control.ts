import type { OneWayFrame } from '@ricochet/client';
import type { CreditReturnedFrame, CreditWantedFrame } from '@ricochet/protocol';
import type { CreditLoans } from './credit-loans.js';
import { CreditWindow } from './credit-window.js';
import type { ResultEntry } from './delivery-results.js';
import type { Subscription } from './push-consumer-lifecycle.js';

/** Options of {@link FlowControl}. */
export interface FlowControlOptions {
  /** The consumer's `maxCachedMessages`: the most deliveries out at once. */
  readonly maxCachedMessages: number;
  /** The consumer's `concurrency`. */
  readonly concurrency: number;
  /** The subscription that may be granted credit now (active, on the live session), if any. */
  readonly creditable: () => Subscription | undefined;
  /** How many cached messages could start as soon as a listener is free. */
  readonly startableCount: () => number;
  /** Write a one-way frame (`credit`). */
  readonly send: (frame: OneWayFrame) => void;
  /**
   * The consumer's credit as one pool, lent to the subscriptions that borrow
   * (docs/protocol/README.md#credit-lending). @default none: the subscription always keeps its window
   */
  readonly loans?: CreditLoans<FlowControl> | undefined;
}

/**
 * The push consumer's side of the broker's credit (docs/protocol/frames.md, `credit`): the
 * subscription's initial credit, and the `credit` frames that keep its deliveries out at the
 * {@link CreditWindow}'s size — never more than `maxCachedMessages`.
 *
 * A result frame on its way takes its messages out of the window, so their credit goes back
 * right behind it. The broker reads the results before the credit on the same connection, so it
 * never counts more unsettled deliveries than the credit it was given, while the credit does not
 * wait for the results' durable commit. Refused results (410) are no longer the broker's either.
 *
 * A subscription that borrows (an owned-scope one on a session granted `creditLending`) keeps no
 * window: its credit is lent out of the consumer's one pool ({@link CreditLoans}) when its broker
 * asks (`creditWanted`), and what its results free goes back to the pool, not to it.
 */
export class FlowControl {
  readonly #options: FlowControlOptions;
  readonly #window: CreditWindow;
  /** The current subscription borrows from {@link FlowControlOptions.loans} instead of keeping its window. */
  #borrowing = false;
  /** A subscription was asked for and has not ended: its broker may hold the window's credit. */
  #open = false;

  constructor(options: FlowControlOptions) {
    this.#options = options;
    // Twice `concurrency`: every listener busy, and as many messages again on their way to them.
    this.#window = new CreditWindow({
      floor: Math.min(options.maxCachedMessages, 2 * options.concurrency),
      max: options.maxCachedMessages,
    });
  }

  /** Whether the current subscription borrows its credit. */
  get borrowing(): boolean {
    return this.#borrowing;
  }

  /**
   * Credit of a subscription that keeps its window, granted and not yet spent on a delivery: its
   * broker may deliver that many more without asking. The pool counts it as out
   * ({@link CreditLoans}), so that a window and the pool's loans never both bring a message for
   * the same room (a consumer moving onto its owners keeps its window until it has moved).
   */
  get unspentCredit(): number {
    return this.#open && !this.#borrowing ? this.#window.unspent : 0;
  }

  /**
   * A `subscribe` is sent: returns its `maxCachedMessages`, the new subscription's initial credit.
   * With `borrow` (an owned-scope subscription on a session granted `creditLending`), it is a
   * first loan out of the consumer's pool, as large as the window would be.
   */
  subscribing(borrow = false): number {
    const loans = this.#options.loans;
    const size = this.#window.open();
    this.#open = true;
    this.#borrowing = borrow && loans !== undefined;
    if (loans === undefined) return size;
    if (!this.#borrowing) {
      loans.forget(this);
      return size;
    }
    return loans.open(this, size);
  }

  /** The subscription is gone (its session ended, or the link retired): what it borrowed is the pool's again. */
  ended(): void {
    this.#open = false;
    this.#borrowing = false;
    this.#options.loans?.forget(this);
  }

  /**
   * `creditWanted` on this subscription's session. It may come in the same read as `subscribed`,
   * before the subscription is known: it is taken then too, and served once it is ({@link subscribed}).
   */
  wanted(frame: CreditWantedFrame): void {
    if (this.#mine(frame.subscriptionId)) this.#options.loans?.wanted(this, frame.ready, frame.late);
  }

  /** `creditReturned` on this subscription's session (as {@link wanted}, perhaps before `subscribed`). */
  returned(frame: CreditReturnedFrame): void {
    if (this.#mine(frame.subscriptionId)) this.#options.loans?.returned(this, frame.credits);
  }

  /** The subscription is known now: a want that came before it can be served. */
  subscribed(): void {
    if (this.#borrowing) this.#options.loans?.serve();
  }

  /** The pool lends this subscription `credits`; `false` when there is no live subscription to lend to. */
  lend(credits: number): boolean {
    const subscription = this.#options.creditable();
    if (!this.#borrowing || subscription === undefined) return false;
    this.#grant(subscription, credits);
    return true;
  }

  /** The most deliveries out is now `maxCachedMessages` (see {@link CreditWindow.resize}). */
  resize(maxCachedMessages: number): void {
    this.#window.resize(maxCachedMessages);
  }

  /** A `deliver` of the current subscription brought `count` messages. */
  delivered(count: number): void {
    if (this.#borrowing) this.#options.loans?.delivered(this, count);
    else this.#window.delivered(count);
  }

  /** A result frame was handed to the connection. */
  sent(results: readonly ResultEntry[]): void {
    const subscription = this.#options.creditable();
    let settled = 0;
    if (subscription !== undefined) {
      for (const result of results) if (result.creditTo === subscription) settled += 1;
    }
    // A window tops itself up first: the pool counts what it grants as out (`unspentCredit`), so
    // the same result does not also become a loan to another subscription.
    if (!this.#borrowing && subscription !== undefined && settled > 0) {
      this.#grant(subscription, this.#window.settled(settled, this.#options.startableCount()));
    }
    // The pool counts every delivery the consumer holds, an earlier subscription's too (one made
    // before the owners were known, or before this one moved onto its broker's queues): every
    // result frees it, and every result may make room for a retry that waits at an owner (P3).
    // Counting only the live subscription's results left a retry waiting for good once the pool
    // was over-committed by an earlier subscription's deliveries, whose results then lent nothing.
    // Borrowed credit goes back to the pool this way, which lends it where it is wanted.
    if (results.length > 0) this.#options.loans?.settled(results.length, this.#options.startableCount());
  }

  /** The listeners ran out of work: perhaps the window is what they wait for. */
  starved(): void {
    // A borrowing subscription has no window: the consumer tells its pool, once (`CreditLoans.starved`).
    if (this.#borrowing) return;
    const subscription = this.#options.creditable();
    if (subscription !== undefined) this.#grant(subscription, this.#window.starved());
  }

  /** A frame of the borrowing subscription: the live one, or the one being made (no other on this session borrows). */
  #mine(subscriptionId: number): boolean {
    const live = this.#options.creditable();
    return this.#borrowing && (live === undefined || live.id === subscriptionId);
  }

  #grant(subscription: Subscription, credits: number): void {
    if (credits > 0) this.#options.send({ type: 'credit', subscriptionId: subscription.id, credits });
  }
}
