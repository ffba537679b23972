import { describe, expect, it } from 'vitest';
import type { RetryPolicy } from '../retry-policy.js';
import { DEFAULT_MAX_POSTPONE_MS, POSTPONED_TOO_LONG_REASON } from './postpone.js';
import {
  initialPushState,
  type PushLifecycleContext,
  type PushState,
  pushTransition,
} from './push-lifecycle.js';

const POLICY: RetryPolicy = { type: 'fixed', delayMs: 1_000 };

function step(state: PushState, atMs: number, postponeMs: number, extra: Partial<PushLifecycleContext> = {}) {
  const context = { retryPolicy: POLICY, maxRetries: 0, ...extra };
  const inflight = pushTransition(state, { type: 'delivered', atMs, leaseDurationMs: 60_000 }, context);
  if (!inflight.ok) throw new Error(inflight.rejection.message);
  return pushTransition(
    inflight.state,
    { type: 'postponed', atMs, lease: inflight.state.lease, postponeMs },
    context,
  );
}

function due(state: PushState, atMs: number): PushState {
  const result = pushTransition(state, { type: 'retryDue', atMs }, { retryPolicy: POLICY, maxRetries: 0 });
  if (!result.ok) throw new Error(result.rejection.message);
  return result.state;
}

describe('X4: postponed, not failed', () => {
  it('waits the postponement without a failure, so even maxRetries 0 delivers it again with the same attempt', () => {
    const postponed = step(initialPushState(), 0, 500);
    expect(postponed.ok && postponed.state).toMatchObject({
      state: 'waitingRetry',
      retryAtMs: 500,
      failures: 0,
      firstPostponedAtMs: 0,
    });
    expect(postponed.ok && postponed.effects).toContainEqual({
      type: 'recordOutcome',
      outcome: 'postponed',
      lease: 1,
      deliveryAttempt: 1,
    });
    if (!postponed.ok) return;
    const again = step(due(postponed.state, 500), 500, 500);
    expect(again.ok && again.state).toMatchObject({
      state: 'waitingRetry',
      failures: 0,
      firstPostponedAtMs: 0,
    });
  });

  it('fails as usual once a postponement would come back past maxPostponeMs from the first', () => {
    const first = step(initialPushState(), 0, 600, { maxPostponeMs: 1_000 });
    if (!first.ok) throw new Error('refused');
    const second = step(due(first.state, 600), 600, 600, { maxPostponeMs: 1_000 });
    // maxRetries 0: that failure is the last, so the DLQ, with the failure's reason.
    expect(second.ok && second.state).toMatchObject({
      state: 'dlq',
      cause: 'maxRetries',
      reason: POSTPONED_TOO_LONG_REASON,
      failures: 1,
    });
    expect(DEFAULT_MAX_POSTPONE_MS).toBe(3_600_000);
  });

  it('records a postponement that became a failure as failed, with its reason, when attempts remain', () => {
    const first = step(initialPushState(), 0, 600, { maxPostponeMs: 1_000, maxRetries: 3 });
    if (!first.ok) throw new Error('refused');
    const second = step(due(first.state, 600), 600, 600, { maxPostponeMs: 1_000, maxRetries: 3 });
    expect(second.ok && second.state).toMatchObject({ state: 'waitingRetry', failures: 1, retryAtMs: 1_600 });
    expect(second.ok && second.effects).toContainEqual({
      type: 'recordOutcome',
      outcome: 'failed',
      lease: 2,
      deliveryAttempt: 1,
      reason: POSTPONED_TOO_LONG_REASON,
    });
  });

  it('counts toward the retry budget when the group has one, instead of maxPostponeMs', () => {
    const withinBudget = step(initialPushState(), 0, 5_000, { maxRetryDurationMs: 5_000, maxPostponeMs: 1 });
    expect(withinBudget.ok && withinBudget.state.state).toBe('waitingRetry');
    const pastBudget = step(initialPushState(), 0, 5_001, { maxRetryDurationMs: 5_000 });
    expect(pastBudget.ok && pastBudget.state).toMatchObject({
      state: 'dlq',
      cause: 'retryBudget',
      failures: 1,
    });
  });

  it('refuses a postponement out of range, leaving the delivery inflight', () => {
    const refused = step(initialPushState(), 0, 86_400_001);
    expect(refused.ok ? 'moved' : refused.rejection.reason).toBe('invalidEvent');
  });
});
