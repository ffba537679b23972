import { isDurationMs } from './lease-steps.js';

/** How long a group lets its listeners postpone a message, from its first postponement (X4): 1 h. */
export const DEFAULT_MAX_POSTPONE_MS = 60 * 60 * 1_000;

/** The reason recorded when postponing past `maxPostponeMs` turns into a failure (X4). */
export const POSTPONED_TOO_LONG_REASON = 'postponed for longer than maxPostponeMs';

/** The reason recorded when postponing past the retry budget dead-letters the message (X2, X4). */
export const POSTPONED_PAST_BUDGET_REASON = 'postponed past the retry budget';

/**
 * X4: what a postponement of `postponeMs` at `atMs` becomes. With a retry budget, postponements
 * count toward it, and one that would come back past it dead-letters (`budget`); without one, a
 * postponement that would come back more than `maxPostponeMs` after the message's first
 * postponement fails as usual (`fail`); any other waits without a failure (`wait`).
 */
export function postponeVerdict(
  atMs: number,
  postponeMs: number,
  firstPostponedAtMs: number | undefined,
  firstDeliveredAtMs: number | undefined,
  limits: { readonly maxRetryDurationMs?: number; readonly maxPostponeMs?: number },
): 'wait' | 'fail' | 'budget' {
  const backAtMs = atMs + postponeMs;
  if (limits.maxRetryDurationMs !== undefined) {
    const startMs = firstDeliveredAtMs ?? atMs;
    return backAtMs - startMs > limits.maxRetryDurationMs ? 'budget' : 'wait';
  }
  const maxPostponeMs = limits.maxPostponeMs ?? DEFAULT_MAX_POSTPONE_MS;
  return backAtMs - (firstPostponedAtMs ?? atMs) > maxPostponeMs ? 'fail' : 'wait';
}

/** A postponement is a whole number of ms from 0 to `maxMs`. */
export function isPostponeMs(value: number, maxMs: number): boolean {
  return isDurationMs(value) && value <= maxMs;
}
