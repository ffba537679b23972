import { ClientError } from '@ricochet/client';
import { BrokerError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { type FailedAttempt, retryDecision } from './send-retry.js';

const noJitter = () => 0.5;

/** A failed first attempt with the defaults (3 attempts, 30 s), `error` its failure. */
function attempt(error: FailedAttempt['error'], fields: Partial<FailedAttempt> = {}): FailedAttempt {
  return {
    error,
    attempts: 1,
    handoverRetries: 0,
    maxAttempts: 3,
    deadlineMs: 30_000,
    nowMs: 0,
    random: noJitter,
    nextThrottleDelayMs: () => 1_000,
    ...fields,
  };
}

const unavailable = new BrokerError(503, 'queue 0 is between owners; try again');
const throttled = new BrokerError(530, 'throttled');

describe('retryDecision (R2)', () => {
  it('retries a 503 after 25 ms, 50, 100, … up to 1 s, whatever the attempts made', () => {
    const delays = [0, 1, 2, 3, 4, 5, 6, 20].map((handoverRetries) =>
      retryDecision(attempt(unavailable, { attempts: handoverRetries + 1, handoverRetries })),
    );
    expect(delays).toEqual(
      [25, 50, 100, 200, 400, 800, 1_000, 1_000].map((delayMs) => ({
        kind: 'after',
        delayMs,
        handover: true,
      })),
    );
  });

  it('fails a 503 once the next attempt would start at or past the deadline', () => {
    expect(retryDecision(attempt(unavailable, { nowMs: 29_974 }))).toEqual({
      kind: 'after',
      delayMs: 25,
      handover: true,
    });
    expect(retryDecision(attempt(unavailable, { nowMs: 29_975 }))).toEqual({ kind: 'fail' });
  });

  it('does not retry a 503 with maxAttempts 1', () => {
    expect(retryDecision(attempt(unavailable, { maxAttempts: 1 }))).toEqual({ kind: 'fail' });
  });

  it('retries other retryable failures at once while attempts other than 503s remain', () => {
    const closed = new ClientError('CONNECTION_CLOSED', 'dropped');
    expect(retryDecision(attempt(closed))).toEqual({ kind: 'now' });
    expect(retryDecision(attempt(new BrokerError(500, 'broken'), { attempts: 2 }))).toEqual({ kind: 'now' });
    expect(retryDecision(attempt(new BrokerError(408, 'slow'), { attempts: 3 }))).toEqual({ kind: 'fail' });
    // Five attempts, two of them answered 503: the third counted one was the last.
    expect(retryDecision(attempt(closed, { attempts: 4, handoverRetries: 2 }))).toEqual({ kind: 'now' });
    expect(retryDecision(attempt(closed, { attempts: 5, handoverRetries: 2 }))).toEqual({ kind: 'fail' });
  });

  it('retries 530 after its backoff, or the longer retryAfterMs hint, within maxAttempts', () => {
    expect(retryDecision(attempt(throttled))).toEqual({ kind: 'after', delayMs: 1_000, handover: false });
    const hinted = new BrokerError(530, 'over the rate', { details: { retryAfterMs: 4_000 } });
    expect(retryDecision(attempt(hinted))).toEqual({ kind: 'after', delayMs: 4_000, handover: false });
    const farHint = new BrokerError(530, 'over the rate', { details: { retryAfterMs: 10_000_000 } });
    expect(retryDecision(attempt(farHint))).toEqual({ kind: 'after', delayMs: 120_000, handover: false });
    expect(retryDecision(attempt(throttled, { attempts: 3 }))).toEqual({ kind: 'fail' });
    // The deadline bounds the 503s only.
    expect(retryDecision(attempt(throttled, { nowMs: 40_000 }))).toMatchObject({ kind: 'after' });
  });

  it.each([400, 401, 403, 404, 409, 413, 599])('fails %i at once', (code) => {
    expect(retryDecision(attempt(new BrokerError(code, 'no')))).toEqual({ kind: 'fail' });
  });
});
