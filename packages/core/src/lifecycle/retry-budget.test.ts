import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '../retry-policy.js';
import { initialPushState, type PushEvent, type PushState, pushTransition } from './push-lifecycle.js';
import {
  initialSimpleState,
  type SimpleEvent,
  type SimpleState,
  simpleTransition,
} from './simple-lifecycle.js';

const FIXED_1S: RetryPolicy = { type: 'fixed', delayMs: 1_000 };

function push(state: PushState, event: PushEvent, maxRetryDurationMs?: number): PushState {
  const context = {
    retryPolicy: FIXED_1S,
    maxRetries: 16,
    ...(maxRetryDurationMs === undefined ? {} : { maxRetryDurationMs }),
  };
  const result = pushTransition(state, event, context);
  if (!result.ok) throw new Error(result.rejection.message);
  return result.state;
}

/** Deliver at `atMs` and fail `failAfterMs` later. */
function deliverAndFail(state: PushState, atMs: number, failAfterMs: number, budgetMs?: number): PushState {
  const inflight = push(state, { type: 'delivered', atMs, leaseDurationMs: 60_000 }, budgetMs);
  return push(
    inflight,
    { type: 'failed', atMs: atMs + failAfterMs, lease: inflight.lease, reason: 'boom' },
    budgetMs,
  );
}

describe('X2: the retry budget (push)', () => {
  it('dead-letters the failure whose retry would fall past the budget, with attempts left', () => {
    // Delivered at 0; a retry 1 s after a failure at 0 is due at 1 000; at 1 500 the budget (2 500) holds.
    let state = deliverAndFail(initialPushState(), 0, 0, 2_500);
    expect(state).toMatchObject({ state: 'waitingRetry', retryAtMs: 1_000 });
    state = push(state, { type: 'retryDue', atMs: 1_000 }, 2_500);
    state = deliverAndFail(state, 1_000, 0, 2_500);
    expect(state).toMatchObject({ state: 'waitingRetry', retryAtMs: 2_000 });
    state = push(state, { type: 'retryDue', atMs: 2_000 }, 2_500);
    // Failed at 2 000: the retry would come at 3 000, 500 ms past the budget.
    state = deliverAndFail(state, 2_000, 0, 2_500);
    expect(state).toMatchObject({
      state: 'dlq',
      cause: 'retryBudget',
      reason: 'boom',
      failures: 3,
      firstDeliveredAtMs: 0,
      firstFailedAtMs: 0,
    });
  });

  it('allows a retry landing exactly on the budget', () => {
    expect(deliverAndFail(initialPushState(), 0, 1_000, 2_000)).toMatchObject({ state: 'waitingRetry' });
    expect(deliverAndFail(initialPushState(), 0, 1_001, 2_000)).toMatchObject({
      state: 'dlq',
      cause: 'retryBudget',
    });
  });

  it('never dead-letters early without a budget, or on a record stored before first deliveries were kept', () => {
    expect(deliverAndFail(initialPushState(), 0, 10 * 86_400_000)).toMatchObject({ state: 'waitingRetry' });
    const legacy: PushState = { state: 'ready', failures: 2, releases: 0, lease: 2 };
    const inflight = push(legacy, { type: 'delivered', atMs: 5_000_000, leaseDurationMs: 60_000 }, 1);
    // The record's budget starts at this delivery: it knew no earlier one.
    expect(inflight.firstDeliveredAtMs).toBe(5_000_000);
  });

  it('dead-letters, for any budget and timings, exactly when the next retry would pass it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        (budgetMs, failAfterMs) => {
          const state = deliverAndFail(initialPushState(), 1_000, failAfterMs, budgetMs);
          const passes = failAfterMs + 1_000 > budgetMs;
          expect(state.state).toBe(passes ? 'dlq' : 'waitingRetry');
        },
      ),
    );
  });
});

describe('X2: the retry budget (simple)', () => {
  function simple(state: SimpleState, event: SimpleEvent): SimpleState {
    const result = simpleTransition(state, event, { maxRetries: 16, maxRetryDurationMs: 1_000 });
    if (!result.ok) throw new Error(result.rejection.message);
    return result.state;
  }

  it('dead-letters an expired lease once the first delivery is more than the budget ago', () => {
    let state = simple(initialSimpleState(), { type: 'delivered', atMs: 0, invisibleDurationMs: 600 });
    state = simple(state, { type: 'leaseExpired', atMs: 600, lease: 1 });
    expect(state.state).toBe('ready');
    state = simple(state, { type: 'delivered', atMs: 700, invisibleDurationMs: 600 });
    state = simple(state, { type: 'leaseExpired', atMs: 1_300, lease: 2 });
    expect(state).toMatchObject({ state: 'dlq', cause: 'retryBudget', failures: 2, firstFailedAtMs: 600 });
  });
});
