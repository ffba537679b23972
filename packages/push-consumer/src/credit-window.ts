/** Options of {@link CreditWindow}. */
export interface CreditWindowOptions {
  /** The smallest window, and the first one: at least 1, at most `max`. */
  readonly floor: number;
  /** The largest window: the consumer's `maxCachedMessages`. */
  readonly max: number;
}

/**
 * How many unsettled deliveries a push consumer lets the broker have out to it (its credit
 * window), from `floor` up to `maxCachedMessages`, sized by what keeps its listeners busy.
 *
 * The broker sends a subscription a message only while it holds credit for it
 * (docs/protocol/frames.md, `credit`), and never gives credit back, so the window is kept by
 * what the consumer grants: the initial credit, then, as results are sent, as many credits as
 * bring the deliveries out (unsettled, or credit the broker still holds) back to the window.
 *
 * - **Grow**: the listeners ran out of work (a listener free, nothing startable in the cache)
 *   and the last `deliver` used up all the credit the broker could be sure to have had, i.e. the
 *   credit granted up to the `deliver` before it (credit sent since may not have reached the
 *   broker yet). Then the window, not the broker, made them wait: it doubles at once, and the
 *   difference is granted without waiting for results. A broker with no messages sends frames
 *   that leave credit over, so an idle consumer does not grow.
 * - **Shrink**: over one window's worth of results (an epoch), the startable cache never fell
 *   below N messages, and never ran dry: those N were not needed to keep the listeners busy.
 *   The window shrinks by half of them, no lower than `floor`, by granting fewer credits for the
 *   next results (the broker cannot be asked to give credit back).
 *
 * So a consumer whose listeners outpace the round trip to the broker (fast listeners, a busy or
 * distant broker) soon has its whole `maxCachedMessages` out, and batches as large as before;
 * one whose listeners are the bottleneck keeps a short cache, so that a message it holds is not
 * one another instance could be processing, and a release at `close()` hands back little.
 * Counting results and deliveries, not time, keeps it free of clocks and timers.
 *
 * One window serves the consumer's subscriptions one after the other: {@link open} starts the
 * count of a new one (after a reconnect) at the size learnt so far.
 */
export class CreditWindow {
  /** The floor asked for; the one in use is no larger than `#max`. */
  readonly #askedFloor: number;
  #floor: number;
  #max: number;
  #size: number;
  /** Credits granted to the current subscription: its initial credit and every `credit` since. */
  #granted = 0;
  /** Messages it delivered. */
  #received = 0;
  /** Its deliveries whose results were sent: out of the window. */
  #settled = 0;
  /** `#granted` when the previous `deliver` arrived: the credit the broker surely had seen. */
  #grantedAtLastDeliver = 0;
  /** The last `deliver` used up every credit the broker surely had. */
  #exhausted = false;
  /** Results sent in the current epoch. */
  #epochSettled = 0;
  /** The fewest startable messages cached at a result send this epoch; 0 once the cache ran dry. */
  #epochMinWaiting = Number.POSITIVE_INFINITY;

  constructor(options: CreditWindowOptions) {
    this.#askedFloor = options.floor;
    this.#floor = Math.max(1, Math.min(options.floor, options.max));
    this.#max = options.max;
    this.#size = this.#floor;
  }

  /** The window now, in messages. */
  get size(): number {
    return this.#size;
  }

  /** Credit granted to the current subscription that its broker has not spent on a `deliver` yet. */
  get unspent(): number {
    return Math.max(0, this.#granted - this.#received);
  }

  /**
   * The largest window is now `max` (at least 1): the consumer's `maxCachedMessages` was split
   * over another number of subscriptions (one per queue owner). A smaller window is kept by
   * granting fewer credits for the next results: the broker cannot be asked to give credit back,
   * so what is out already comes down to it as its results are sent.
   */
  resize(max: number): void {
    this.#max = Math.max(1, max);
    this.#floor = Math.max(1, Math.min(this.#askedFloor, this.#max));
    this.#size = Math.min(Math.max(this.#size, this.#floor), this.#max);
  }

  /** A new subscription is made: returns its initial credit (`subscribe.maxCachedMessages`). */
  open(): number {
    this.#granted = this.#size;
    this.#received = 0;
    this.#settled = 0;
    this.#grantedAtLastDeliver = this.#size;
    this.#exhausted = false;
    this.#epochSettled = 0;
    this.#epochMinWaiting = Number.POSITIVE_INFINITY;
    return this.#size;
  }

  /** A `deliver` of the current subscription brought `count` messages. */
  delivered(count: number): void {
    this.#received += count;
    this.#exhausted = this.#received >= this.#grantedAtLastDeliver;
    this.#grantedAtLastDeliver = this.#granted;
  }

  /**
   * The results of `count` deliveries of the current subscription were sent, with `waiting`
   * startable messages left in the cache. Returns the credits to grant now (0: none).
   */
  settled(count: number, waiting: number): number {
    this.#settled += count;
    this.#epochSettled += count;
    if (waiting < this.#epochMinWaiting) this.#epochMinWaiting = waiting;
    if (this.#epochSettled >= this.#size) {
      if (this.#epochMinWaiting > 0) {
        this.#size = Math.max(this.#floor, this.#size - Math.ceil(this.#epochMinWaiting / 2));
      }
      this.#epochSettled = 0;
      this.#epochMinWaiting = Number.POSITIVE_INFINITY;
    }
    return this.#topUp();
  }

  /** The listeners ran out of work (a listener free, nothing startable): returns the credits to grant now. */
  starved(): number {
    this.#epochMinWaiting = 0;
    if (!this.#exhausted || this.#size >= this.#max) return 0;
    // One doubling per `deliver` that found the broker out of credit.
    this.#exhausted = false;
    this.#size = Math.min(this.#max, this.#size * 2);
    return this.#topUp();
  }

  /** Grant what brings the deliveries out (unsettled, or credit the broker holds) up to the window. */
  #topUp(): number {
    const credits = this.#size - (this.#granted - this.#settled);
    if (credits <= 0) return 0;
    this.#granted += credits;
    return credits;
  }
}
