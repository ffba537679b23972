import { handoverRetryDelayMs, type Random } from '@ricochet/core';
import { ERROR_CODES, type RicochetError } from '@ricochet/protocol';

/**
 * How long a send may keep retrying a broker's `503 BROKER_UNAVAILABLE` (a queue between owners
 * while a spread cluster moves it, a broker without its store) unless told otherwise, in ms.
 *
 * 30 s: a handover after a graceful stop or a start takes tens to hundreds of milliseconds, but
 * after a crash the queue waits for the dead owner's lease to run out (the broker's
 * `--store-lease-ms`, 10 s by default) and for the next owner to load it, so the window can last
 * some 10–12 s; 30 s rides that with room to spare. It is the producer's default request timeout
 * too, so no send waits on handovers longer than one silent attempt may already take. RocketMQ
 * gives each of its 3 attempts 3 s (some 9 s in all), too short for a lease to expire; Kafka's
 * `delivery.timeout.ms` of 120 s suits a batching producer whose callers do not wait, longer than
 * a caller awaiting `send` should be held.
 */
export const DEFAULT_SEND_TIMEOUT_MS = 30_000;

/** What to do with a send whose attempt failed (R2). */
export type RetryDecision =
  /** Reject the send with this (the last) error. */
  | { readonly kind: 'fail' }
  /** Send it again at once (it waits in the connection's queue while a reconnect runs). */
  | { readonly kind: 'now' }
  /** Send it again after `delayMs`: `530`'s backoff, or `503`'s short handover backoff. */
  | { readonly kind: 'after'; readonly delayMs: number; readonly handover: boolean };

/** Where a failed send stands, and the producer's settings. */
export interface FailedAttempt {
  readonly error: RicochetError;
  /** Attempts made so far, this one included. */
  readonly attempts: number;
  /** Of those, the ones answered `503` and retried through the handover backoff. */
  readonly handoverRetries: number;
  readonly maxAttempts: number;
  /** When `503` stops being retried, in `nowMs`'s clock: the send's start plus `sendTimeoutMs`. */
  readonly deadlineMs: number;
  readonly nowMs: number;
  readonly random: Random;
  /** The next delay of the message's own `530` backoff; called only for a `530`. */
  readonly nextThrottleDelayMs: () => number;
}

/**
 * R2's decision for a failed attempt. A retryable `503` is retried after the handover backoff
 * (25 ms doubling to 1 s, ±20 %) while the next attempt starts before the deadline, outside the
 * attempt count; with `maxAttempts` 1 it is not retried at all. Other failures: non-retryable ones
 * fail at once; retryable ones are retried while fewer than `maxAttempts` attempts other than the
 * `503`s were made, `530` after its backoff (or the broker's longer `retryAfterMs` hint), the
 * rest at once.
 */
export function retryDecision(attempt: FailedAttempt): RetryDecision {
  const { error } = attempt;
  if (error.retryable && error.code === ERROR_CODES.BROKER_UNAVAILABLE.code && attempt.maxAttempts > 1) {
    const delayMs = handoverRetryDelayMs(attempt.handoverRetries + 1, attempt.random);
    return attempt.nowMs + delayMs < attempt.deadlineMs ? { kind: 'after', delayMs, handover: true } : FAIL;
  }
  if (!error.retryable || attempt.attempts - attempt.handoverRetries >= attempt.maxAttempts) return FAIL;
  if (error.code === ERROR_CODES.TOO_MANY_REQUESTS.code) {
    // The backoff's delay, or longer when the broker says when the send may pass (a principal's
    // publish rate): retrying sooner would only be refused again.
    const delayMs = Math.max(attempt.nextThrottleDelayMs(), retryAfterHintMs(error));
    return { kind: 'after', delayMs, handover: false };
  }
  return NOW;
}

const FAIL: RetryDecision = Object.freeze({ kind: 'fail' });
const NOW: RetryDecision = Object.freeze({ kind: 'now' });

/** The longest `retryAfterMs` hint honoured: R2's longest backoff. */
const MAX_RETRY_AFTER_HINT_MS = 120_000;

/**
 * The wait a `530` asks for in `details.retryAfterMs` (the broker sends it when a principal is
 * over its publish rate), within {@link MAX_RETRY_AFTER_HINT_MS}; 0 without a usable hint.
 */
function retryAfterHintMs(error: RicochetError): number {
  const hint = error.details?.retryAfterMs;
  if (typeof hint !== 'number' || !Number.isFinite(hint) || hint <= 0) return 0;
  return Math.min(hint, MAX_RETRY_AFTER_HINT_MS);
}
