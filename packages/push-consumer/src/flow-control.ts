import type { OneWayFrame } from '@ricochet/client';
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
 */
export class FlowControl {
  readonly #options: FlowControlOptions;
  readonly #window: CreditWindow;

  constructor(options: FlowControlOptions) {
    this.#options = options;
    // Twice `concurrency`: every listener busy, and as many messages again on their way to them.
    this.#window = new CreditWindow({
      floor: Math.min(options.maxCachedMessages, 2 * options.concurrency),
      max: options.maxCachedMessages,
    });
  }

  /** A `subscribe` is sent: returns its `maxCachedMessages`, the new subscription's initial credit. */
  subscribing(): number {
    return this.#window.open();
  }

  /** The most deliveries out is now `maxCachedMessages` (see {@link CreditWindow.resize}). */
  resize(maxCachedMessages: number): void {
    this.#window.resize(maxCachedMessages);
  }

  /** A `deliver` of the current subscription brought `count` messages. */
  delivered(count: number): void {
    this.#window.delivered(count);
  }

  /** A result frame was handed to the connection. */
  sent(results: readonly ResultEntry[]): void {
    const subscription = this.#options.creditable();
    if (subscription === undefined) return;
    let settled = 0;
    for (const result of results) if (result.creditTo === subscription) settled += 1;
    if (settled > 0) {
      this.#grant(subscription, this.#window.settled(settled, this.#options.startableCount()));
    }
  }

  /** The listeners ran out of work: perhaps the window is what they wait for. */
  starved(): void {
    const subscription = this.#options.creditable();
    if (subscription !== undefined) this.#grant(subscription, this.#window.starved());
  }

  #grant(subscription: Subscription, credits: number): void {
    if (credits > 0) this.#options.send({ type: 'credit', subscriptionId: subscription.id, credits });
  }
}
