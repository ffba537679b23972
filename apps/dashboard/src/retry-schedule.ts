import { type RetryPolicy, retryDelayMs } from '@ricochet/core';

/** When one delivery of a message would happen, counted from its first delivery. */
export interface ScheduledAttempt {
  /** 1 for the first delivery. */
  readonly attempt: number;
  /** Time since the first delivery failed… plus each earlier delay: when this attempt fires. */
  readonly atMs: number;
  /** The wait before this attempt (0 for the first). */
  readonly delayMs: number;
  /** The exponential policy's jitter spreads this attempt within ±spreadMs. */
  readonly spreadMs: number;
}

/** Drawn at most: a group may allow up to 1000 retries, a timeline shows the first ones. */
export const MAX_DRAWN_ATTEMPTS = 40;

/**
 * When each delivery of a message that keeps failing would fire, with the broker's own retry
 * functions from `@ricochet/core` (rule P3): the delay counts from the failure, and a failure is
 * taken to come right at delivery (a slow consumer shifts every later attempt by its run time).
 * Jitter is drawn at its midpoint, and its spread reported, so the timeline is the same every time.
 */
export function retrySchedule(policy: RetryPolicy, maxRetries: number): ScheduledAttempt[] {
  const attempts: ScheduledAttempt[] = [{ attempt: 1, atMs: 0, delayMs: 0, spreadMs: 0 }];
  let atMs = 0;
  const retries = Math.min(maxRetries, MAX_DRAWN_ATTEMPTS - 1);
  for (let retry = 1; retry <= retries; retry++) {
    const delayMs = retryDelayMs(policy, retry, () => 0.5);
    atMs += delayMs;
    const spreadMs = Math.round(delayMs * (policy.jitter ?? 0));
    attempts.push({ attempt: retry + 1, atMs, delayMs, spreadMs });
  }
  return attempts;
}

/** `1.5 s`, `2 min`, `1 h 30 min`, `3 d`. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 60_000) return `${trim(ms / 1_000)} s`;
  if (ms < 3_600_000) return `${trim(ms / 60_000)} min`;
  if (ms < 86_400_000) {
    const hours = Math.floor(ms / 3_600_000);
    const minutes = Math.round((ms % 3_600_000) / 60_000);
    return minutes === 0 ? `${hours} h` : `${hours} h ${minutes} min`;
  }
  return `${trim(ms / 86_400_000)} d`;
}

function trim(value: number): string {
  return String(Math.round(value * 10) / 10);
}
