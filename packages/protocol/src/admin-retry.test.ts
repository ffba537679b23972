import { ManualClock } from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import {
  type AdminAttemptAnswer,
  DEFAULT_ADMIN_RETRY,
  isIdempotentAdminRequest,
  retryAfterMs,
  retryUnavailable,
} from './admin-retry.js';

/** A broker that answers each attempt with the next of `statuses` (the last one again once spent). */
function answering(statuses: readonly number[], retryAfter?: string) {
  const made: number[] = [];
  const attempt = async (): Promise<AdminAttemptAnswer> => {
    const status = statuses[Math.min(made.length, statuses.length - 1)] as number;
    made.push(status);
    return { status, retryAfter };
  };
  return { made, attempt };
}

/** A clock that moves only when the retry sleeps, by what it sleeps: no real time passes. */
function sleepingClock() {
  const clock = new ManualClock(1_700_000_000_000);
  const slept: number[] = [];
  const sleep = async (delayMs: number) => {
    slept.push(delayMs);
    clock.advanceBy(delayMs);
  };
  return { clock, slept, sleep, random: () => 0.5 };
}

describe('retryUnavailable', () => {
  it('retries an idempotent request answered 503 after 250, 500 ms … until it is answered', async () => {
    const broker = answering([503, 503, 200]);
    const time = sleepingClock();
    const answer = await retryUnavailable('PUT /v1/groups/orders', broker.attempt, time);
    expect(answer.status).toBe(200);
    expect(broker.made).toEqual([503, 503, 200]);
    // random 0.5 is no jitter: the backoff's own values.
    expect(time.slept).toEqual([250, 500]);
  });

  it('gives up after maxAttempts with the last 503, within the budget', async () => {
    const broker = answering([503]);
    const time = sleepingClock();
    const answer = await retryUnavailable('GET /v1/groups', broker.attempt, time);
    expect(answer.status).toBe(503);
    expect(broker.made).toHaveLength(DEFAULT_ADMIN_RETRY.maxAttempts);
    expect(time.slept).toEqual([250, 500, 1_000]);
    expect(time.slept.reduce((sum, ms) => sum + ms, 0)).toBeLessThanOrEqual(DEFAULT_ADMIN_RETRY.budgetMs);
  });

  it('waits what Retry-After asks when it is longer than the backoff, and stops when it points past the budget', async () => {
    const waited = sleepingClock();
    const asked = answering([503, 200], '2');
    expect((await retryUnavailable('POST /v1/groups/orders/pause', asked.attempt, waited)).status).toBe(200);
    expect(waited.slept).toEqual([2_000]);

    const tooLate = sleepingClock();
    const later = answering([503, 200], '60');
    expect((await retryUnavailable('GET /v1/topics', later.attempt, tooLate)).status).toBe(503);
    expect(later.made).toEqual([503]);
    expect(tooLate.slept).toEqual([]);
  });

  it('never retries a request that is not idempotent, nor an answer other than 503', async () => {
    const redrive = answering([503, 200]);
    const time = sleepingClock();
    expect((await retryUnavailable('POST /v1/groups/orders/dlq/redrive', redrive.attempt, time)).status).toBe(
      503,
    );
    expect(redrive.made).toEqual([503]);
    const refused = answering([500, 200]);
    expect((await retryUnavailable('PUT /v1/groups/orders', refused.attempt, time)).status).toBe(500);
    expect(refused.made).toEqual([500]);
    expect(time.slept).toEqual([]);
  });
});

describe('isIdempotentAdminRequest', () => {
  it('holds for reads, config replacements and pause/resume, not for a redrive', () => {
    expect(isIdempotentAdminRequest('GET /v1/groups/orders/dlq?cursor=0&limit=10')).toBe(true);
    expect(isIdempotentAdminRequest('PUT /v1/topics/orders')).toBe(true);
    expect(isIdempotentAdminRequest('POST /v1/groups/orders/resume')).toBe(true);
    expect(isIdempotentAdminRequest('POST /v1/groups/orders/dlq/redrive')).toBe(false);
    expect(isIdempotentAdminRequest('DELETE /v1/groups/orders')).toBe(false);
  });
});

describe('retryAfterMs', () => {
  it('reads delay-seconds and HTTP dates, and nothing else', () => {
    const nowMs = Date.parse('Sun, 29 Nov 2026 10:00:00 GMT');
    expect(retryAfterMs('3', nowMs)).toBe(3_000);
    expect(retryAfterMs('Sun, 29 Nov 2026 10:00:02 GMT', nowMs)).toBe(2_000);
    expect(retryAfterMs('Sun, 29 Nov 2026 09:00:00 GMT', nowMs)).toBe(0);
    expect(retryAfterMs('soon', nowMs)).toBeUndefined();
    expect(retryAfterMs(undefined, nowMs)).toBeUndefined();
  });
});
