import type { Clock } from '@ricochet/core';

/** A send admitted, or refused with how long to wait before the frame would be admitted. */
export type RateDecision = { readonly ok: true } | { readonly ok: false; readonly retryAfterMs: number };

interface Bucket {
  ratePerSecond: number;
  tokens: number;
  updatedAtMs: number;
}

/**
 * `publishRatePerSecond` (DESIGN.md §7): one token bucket per principal, over all its
 * connections, refilled at its rate and holding at most one second's worth (at least one
 * message). A send frame of n messages is admitted when the bucket holds min(n, capacity)
 * tokens and then takes all n, going into debt if it must: a frame larger than a second's worth
 * still gets through, and the debt holds the principal's average at its rate. A refused frame
 * takes nothing and learns when it would be admitted: the hint of the 530 it gets.
 */
export class PublishRateLimiter {
  readonly #clock: Clock;
  readonly #buckets = new Map<string, Bucket>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Admit `count` messages from `principal`, limited to `ratePerSecond`. */
  take(principal: string, ratePerSecond: number, count: number): RateDecision {
    const nowMs = this.#clock.now();
    const capacity = Math.max(1, ratePerSecond);
    let bucket = this.#buckets.get(principal);
    if (!bucket) {
      bucket = { ratePerSecond, tokens: capacity, updatedAtMs: nowMs };
      this.#buckets.set(principal, bucket);
    }
    // A reload may change the rate: the bucket keeps what it holds, within the new capacity.
    bucket.ratePerSecond = ratePerSecond;
    const elapsedMs = Math.max(0, nowMs - bucket.updatedAtMs);
    bucket.tokens = Math.min(capacity, bucket.tokens + (elapsedMs * ratePerSecond) / 1000);
    bucket.updatedAtMs = nowMs;
    const needed = Math.min(count, capacity);
    if (bucket.tokens >= needed) {
      bucket.tokens -= count;
      return { ok: true };
    }
    return {
      ok: false,
      retryAfterMs: Math.max(1, Math.ceil(((needed - bucket.tokens) * 1000) / ratePerSecond)),
    };
  }

  /** Drop the buckets of principals not in `names` (after a reload removed them). */
  retainOnly(names: ReadonlySet<string>): void {
    for (const name of this.#buckets.keys()) if (!names.has(name)) this.#buckets.delete(name);
  }
}
