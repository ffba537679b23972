import type { Random } from './random.js';
import { applyJitter } from './retry-policy.js';

/**
 * Settings of {@link handoverRetryDelayMs}. Short on purpose: a queue between owners in a spread
 * cluster (DESIGN.md §9) finds its next owner in tens to hundreds of milliseconds, so a retry
 * should come soon, and often enough to land in the first moment the queue is served again.
 */
export interface HandoverBackoffOptions {
  /** The delay before the first retry, before jitter. @default 25 (ms) */
  readonly initialMs?: number;
  /** Each later delay is the previous one (before jitter) times this. @default 2 */
  readonly multiplier?: number;
  /** The cap on the delay before jitter. @default 1000 (ms) */
  readonly maxMs?: number;
  /** Uniform spread of every delay, as a fraction. @default 0.2 (±20 %) */
  readonly jitter?: number;
}

/** The defaults of {@link HandoverBackoffOptions}: 25 ms, 50, 100, … capped at 1 s, ±20 %. */
export const DEFAULT_HANDOVER_BACKOFF: Required<HandoverBackoffOptions> = Object.freeze({
  initialMs: 25,
  multiplier: 2,
  maxMs: 1_000,
  jitter: 0.2,
});

/**
 * The wait before retry number `retryNumber` (1 for the first retry) of a request a broker
 * answered "between owners" (`503 BROKER_UNAVAILABLE`) or that met a network failure while the
 * cluster moves queues: `initialMs × multiplier^(retryNumber − 1)`, capped at `maxMs`, spread by
 * ±`jitter` with the injected `random`, in whole milliseconds. The number of retries is not
 * bounded here: the caller stops at its own deadline (the producer's `sendTimeoutMs`).
 *
 * @throws RangeError for a retry number below 1 or settings out of range (a broken invariant).
 */
export function handoverRetryDelayMs(
  retryNumber: number,
  random: Random,
  options: HandoverBackoffOptions = {},
): number {
  const { initialMs, multiplier, maxMs, jitter } = { ...DEFAULT_HANDOVER_BACKOFF, ...options };
  if (!(Number.isInteger(retryNumber) && retryNumber >= 1)) {
    throw new RangeError(`handoverRetryDelayMs needs an integer retry number >= 1, got ${retryNumber}`);
  }
  if (!(initialMs > 0 && maxMs >= initialMs && multiplier >= 1 && jitter >= 0 && jitter < 1)) {
    throw new RangeError(
      'handoverRetryDelayMs needs initialMs > 0, maxMs >= initialMs, multiplier >= 1 and 0 <= jitter < 1',
    );
  }
  // The exponent stops growing one step past the cap, so the power never overflows.
  const growthsToMax =
    multiplier === 1 ? 0 : Math.ceil(Math.log(maxMs / initialMs) / Math.log(multiplier)) + 1;
  const baseMs = Math.min(initialMs * multiplier ** Math.min(retryNumber - 1, growthsToMax), maxMs);
  return Math.max(1, Math.round(applyJitter(baseMs, jitter, random)));
}
