import type { Clock } from './clock.js';

/**
 * How long a group's delivery-rate bucket may save up for (X5): a group idle for a while may take
 * this many milliseconds' worth of deliveries at once, no more. Small, so that the rate over any
 * window of a second or more stays within a few per cent of the limit.
 */
export const DELIVERY_BURST_MS = 100;

/** The most deliveries a {@link DeliveryRateBucket} of `perSecond` lets go at once: its capacity. */
export function deliveryBurst(perSecond: number): number {
  return Math.max(1, Math.ceil((perSecond * DELIVERY_BURST_MS) / 1_000));
}

/**
 * A group's `maxDeliveriesPerSecond` as a token bucket (X5): tokens flow in at `perSecond` up to
 * {@link deliveryBurst}, and each delivery, first or retry, spends one. Over any window of
 * `elapsedMs` it lets go at most `burst + perSecond × elapsedMs / 1000` deliveries. It starts full.
 *
 * Policy only: the engine asks how many may go now ({@link available}), spends what it delivered
 * ({@link spend}), and wakes the group at {@link nextTokenAtMs} when it held some back. Time comes
 * from the injected clock.
 */
export class DeliveryRateBucket {
  /** Deliveries per second, > 0. */
  readonly perSecond: number;
  /** The bucket's capacity: the most deliveries that may go at once. */
  readonly burst: number;
  readonly #clock: Clock;
  #tokens: number;
  #atMs: number;

  /** @throws RangeError when `perSecond` is not a finite number > 0. */
  constructor(perSecond: number, clock: Clock) {
    if (!(Number.isFinite(perSecond) && perSecond > 0))
      throw new RangeError(`perSecond must be a finite number > 0, got ${perSecond}`);
    this.perSecond = perSecond;
    this.burst = deliveryBurst(perSecond);
    this.#clock = clock;
    this.#tokens = this.burst;
    this.#atMs = clock.now();
  }

  /** How many deliveries may go now (whole tokens), at most `wanted`. */
  available(wanted: number): number {
    this.#refill();
    return Math.max(0, Math.min(wanted, Math.floor(this.#tokens)));
  }

  /** Spend one token per delivery made; `count` is at most what {@link available} allowed. */
  spend(count: number): void {
    if (count <= 0) return;
    this.#refill();
    this.#tokens = Math.max(0, this.#tokens - count);
  }

  /** When the next whole token is in the bucket: now when one is there already. */
  nextTokenAtMs(): number {
    this.#refill();
    if (this.#tokens >= 1) return this.#atMs;
    return this.#atMs + Math.ceil(((1 - this.#tokens) * 1_000) / this.perSecond);
  }

  #refill(): void {
    const nowMs = this.#clock.now();
    // A clock that stepped back adds nothing, and takes nothing away.
    if (nowMs <= this.#atMs) return;
    this.#tokens = Math.min(this.burst, this.#tokens + ((nowMs - this.#atMs) * this.perSecond) / 1_000);
    this.#atMs = nowMs;
  }
}
