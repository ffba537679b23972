import { type Random, systemRandom } from './random.js';

const SECOND_MS = 1_000;
const MINUTE_MS = 60 * SECOND_MS;
const HOUR_MS = 60 * MINUTE_MS;

/** Retry N waits `delaysMs[N - 1]`; retries past the end of the list repeat its last value. */
export interface SteppedRetryPolicy {
  readonly type: 'stepped';
  readonly delaysMs: readonly number[];
  /**
   * Spread each delay uniformly within ±`jitter` of the step (a fraction from 0 to 1, exclusive;
   * rule X3). Absent or 0: RocketMQ's exact schedule.
   * @default 0
   */
  readonly jitter?: number;
}

/** Every retry waits the same `delayMs`. */
export interface FixedRetryPolicy {
  readonly type: 'fixed';
  readonly delayMs: number;
  /**
   * Spread each delay uniformly within ±`jitter` of `delayMs` (a fraction from 0 to 1, exclusive;
   * rule X3). Absent or 0: every retry waits exactly `delayMs`.
   * @default 0
   */
  readonly jitter?: number;
}

/**
 * Retry N waits `min(initialMs × multiplier^(N-1), maxMs)`, then spread by ±`jitter` (a fraction:
 * 0.2 means uniformly within ±20 %; rule X3). Unlike the other shapes, the field is required: this
 * shape has named it since DESIGN.md §2 first described it.
 */
export interface ExponentialRetryPolicy {
  readonly type: 'exponential';
  readonly initialMs: number;
  readonly multiplier: number;
  readonly maxMs: number;
  readonly jitter: number;
}

/**
 * How long a failed message waits before its next delivery. The same JSON shape is used on the
 * wire, in the admin API and in the store.
 * @see DESIGN.md §2 and rule P3
 */
export type RetryPolicy = SteppedRetryPolicy | FixedRetryPolicy | ExponentialRetryPolicy;

/**
 * The seeds' table for unordered push consumption (rule P3): 10s, 30s, 1m, 2m … 10m, 20m, 30m, 1h, 2h.
 * Retries after the 16th repeat the last step, 2 h.
 */
export const DEFAULT_PUSH_RETRY_POLICY: SteppedRetryPolicy = Object.freeze({
  type: 'stepped',
  delaysMs: Object.freeze([
    10 * SECOND_MS,
    30 * SECOND_MS,
    1 * MINUTE_MS,
    2 * MINUTE_MS,
    3 * MINUTE_MS,
    4 * MINUTE_MS,
    5 * MINUTE_MS,
    6 * MINUTE_MS,
    7 * MINUTE_MS,
    8 * MINUTE_MS,
    9 * MINUTE_MS,
    10 * MINUTE_MS,
    20 * MINUTE_MS,
    30 * MINUTE_MS,
    1 * HOUR_MS,
    2 * HOUR_MS,
  ]),
});

/** FIFO groups retry at a fixed 3 s (rule P5). */
export const DEFAULT_FIFO_RETRY_POLICY: FixedRetryPolicy = Object.freeze({ type: 'fixed', delayMs: 3_000 });

/** A group allows 16 retries, so at most 17 deliveries (rule P4). */
export const DEFAULT_MAX_RETRIES = 16;

/**
 * The delay before retry number `retryNumber` (1-based: the first retry is 1): the policy's delay,
 * drawn within ±`jitter` of it when the policy has a jitter (rule X3), in whole milliseconds.
 *
 * @param random - used only for a jitter above 0, once per call. @default Math.random
 * @throws RangeError when `retryNumber` is not a whole number ≥ 1; validate policies with
 *   {@link validateRetryPolicy} before use, this function trusts their fields.
 */
export function retryDelayMs(
  policy: RetryPolicy,
  retryNumber: number,
  random: Random = systemRandom,
): number {
  if (!Number.isInteger(retryNumber) || retryNumber < 1) {
    throw new RangeError(`retryNumber must be a whole number >= 1, got ${retryNumber}`);
  }
  const jitter = policy.jitter ?? 0;
  const baseMs = policyDelayMs(policy, retryNumber);
  // X3: at jitter 0 no number is drawn, so RocketMQ's schedule stays exact (and `random` untouched).
  return Math.round(jitter === 0 ? baseMs : applyJitter(baseMs, jitter, random));
}

/** The policy's own delay before retry `retryNumber`, before any jitter. */
function policyDelayMs(policy: RetryPolicy, retryNumber: number): number {
  switch (policy.type) {
    case 'stepped': {
      const steps = policy.delaysMs;
      const step = steps[Math.min(retryNumber, steps.length) - 1];
      if (step === undefined) throw new RangeError('a stepped retry policy needs at least one delay');
      return step;
    }
    case 'fixed':
      return policy.delayMs;
    case 'exponential':
      return exponentialBaseMs(policy, retryNumber);
  }
}

/**
 * `initialMs × multiplier^(retryNumber − 1)`, capped at `maxMs`, in constant time for any retry
 * number up to `Number.MAX_SAFE_INTEGER` (an ordered consumer's default allows 2³¹ − 1 retries).
 * The exponent is capped first, one growth past the point where the delay reaches `maxMs` (one past,
 * so a logarithm rounded down cannot stop it short), so the power never overflows to `Infinity`.
 */
function exponentialBaseMs(policy: ExponentialRetryPolicy, retryNumber: number): number {
  const { initialMs, multiplier, maxMs } = policy;
  if (multiplier === 1 || initialMs >= maxMs) return Math.min(initialMs, maxMs);
  const growthsToMax = Math.ceil(Math.log(maxMs / initialMs) / Math.log(multiplier)) + 1;
  return Math.min(initialMs * multiplier ** Math.min(retryNumber - 1, growthsToMax), maxMs);
}

/** Spread `baseMs` uniformly within ±`jitter` × `baseMs`. */
export function applyJitter(baseMs: number, jitter: number, random: Random): number {
  if (jitter === 0) return baseMs;
  return baseMs + baseMs * jitter * (2 * random() - 1);
}
