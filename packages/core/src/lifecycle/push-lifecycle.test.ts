import { describe, expect, it } from 'vitest';
import { DEFAULT_PUSH_RETRY_POLICY } from '../retry-policy.js';
import {
  initialPushState,
  type PushEvent,
  type PushLifecycleContext,
  type PushState,
  pushTransition,
} from './push-lifecycle.js';

const context: PushLifecycleContext = { retryPolicy: DEFAULT_PUSH_RETRY_POLICY, maxRetries: 16 };
const LEASE_MS = 15 * 60_000;

function apply(state: PushState, event: PushEvent, ctx = context): PushState {
  const result = pushTransition(state, event, ctx);
  if (!result.ok) throw new Error(`rejected: ${result.rejection.message}`);
  return result.state;
}

describe('push lifecycle (P1)', () => {
  it('moves Ready → Inflight → Commit on success', () => {
    let state = initialPushState();
    state = apply(state, { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    expect(state).toMatchObject({
      state: 'inflight',
      lease: 1,
      deliveryAttempt: 1,
      leaseDeadlineMs: LEASE_MS,
    });
    state = apply(state, { type: 'succeeded', atMs: 5, lease: 1 });
    expect(state).toEqual({ state: 'commit', failures: 0, releases: 0, lease: 1, firstDeliveredAtMs: 0 });
  });

  it('moves a failure to WaitingRetry for the policy delay counted from the failure (P3)', () => {
    let state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    state = apply(state, { type: 'failed', atMs: 250, lease: 1, reason: 'boom' });
    expect(state).toEqual({
      state: 'waitingRetry',
      failures: 1,
      releases: 0,
      lease: 1,
      lastFailureReason: 'boom',
      firstDeliveredAtMs: 0,
      firstFailedAtMs: 250,
      retryNumber: 1,
      retryDelayMs: 10_000,
      retryAtMs: 10_250,
    });
  });

  it('returns WaitingRetry to Ready only when the retry is due', () => {
    let state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    state = apply(state, { type: 'failed', atMs: 0, lease: 1, reason: 'boom' });
    const early = pushTransition(state, { type: 'retryDue', atMs: 9_999 }, context);
    expect(early.ok).toBe(false);
    if (!early.ok) expect(early.rejection.reason).toBe('notDue');
    expect(apply(state, { type: 'retryDue', atMs: 10_000 }).state).toBe('ready');
  });

  it('fails a delivery whose lease ran out (P2), and not before', () => {
    const state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: 100 });
    const early = pushTransition(state, { type: 'timedOut', atMs: 99, lease: 1 }, context);
    expect(early.ok ? early.state.state : early.rejection.reason).toBe('notDue');
    expect(apply(state, { type: 'timedOut', atMs: 100, lease: 1 })).toMatchObject({
      state: 'waitingRetry',
      failures: 1,
      lastFailureReason: 'consumption timeout',
    });
  });

  it('refuses a success after the lease deadline', () => {
    const state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: 100 });
    const late = pushTransition(state, { type: 'succeeded', atMs: 100, lease: 1 }, context);
    expect(late.ok ? late.state.state : late.rejection.reason).toBe('leaseExpired');
  });

  it('honours retryAfterMs for one failure', () => {
    let state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    state = apply(state, { type: 'failed', atMs: 10, lease: 1, reason: 'later', retryAfterMs: 42 });
    expect(state).toMatchObject({ state: 'waitingRetry', retryDelayMs: 42, retryAtMs: 52 });
  });

  it('rejects a retryAfterMs out of range', () => {
    const state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    const result = pushTransition(
      state,
      { type: 'failed', atMs: 10, lease: 1, reason: 'x', retryAfterMs: -1 },
      context,
    );
    expect(result.ok ? result.state.state : result.rejection.reason).toBe('invalidEvent');
  });

  it('counts deliveryAttempt 1, 2, 3 across retries (P6)', () => {
    let state = initialPushState();
    const attempts: number[] = [];
    for (let i = 0; i < 3; i++) {
      state = apply(state, { type: 'delivered', atMs: i * 100_000, leaseDurationMs: LEASE_MS });
      if (state.state === 'inflight') attempts.push(state.deliveryAttempt);
      state = apply(state, { type: 'failed', atMs: i * 100_000, lease: state.lease, reason: 'x' });
      if (state.state === 'waitingRetry') state = apply(state, { type: 'retryDue', atMs: state.retryAtMs });
    }
    expect(attempts).toEqual([1, 2, 3]);
  });
});

describe('maxRetries (P4)', () => {
  it('dead-letters at the failure of delivery maxRetries + 1, at once', () => {
    const ctx = { ...context, maxRetries: 2 };
    let state = initialPushState();
    let deliveries = 0;
    for (let i = 0; i < 10 && state.state !== 'dlq'; i++) {
      if (state.state === 'waitingRetry')
        state = apply(state, { type: 'retryDue', atMs: state.retryAtMs }, ctx);
      state = apply(state, { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS }, ctx);
      deliveries += 1;
      state = apply(
        state,
        { type: 'failed', atMs: 0, lease: state.lease, reason: `failure ${deliveries}` },
        ctx,
      );
    }
    expect(deliveries).toBe(3);
    expect(state).toMatchObject({
      state: 'dlq',
      failures: 3,
      reason: 'failure 3',
      lastFailureReason: 'failure 3',
    });
  });

  it('dead-letters the first failure when maxRetries is 0', () => {
    const state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    expect(
      apply(state, { type: 'failed', atMs: 0, lease: 1, reason: 'no' }, { ...context, maxRetries: 0 }).state,
    ).toBe('dlq');
  });
});

describe('dead-letter now (D3)', () => {
  it('moves an inflight message to the DLQ at once, whatever attempts remain, counting the attempt', () => {
    let state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    state = apply(state, { type: 'deadLettered', atMs: 5, lease: 1, reason: 'unparseable order' });
    expect(state).toEqual({
      state: 'dlq',
      reason: 'unparseable order',
      cause: 'deadLetterNow',
      failures: 1,
      lastFailureReason: 'unparseable order',
      firstDeliveredAtMs: 0,
      firstFailedAtMs: 5,
      releases: 0,
      lease: 1,
    });
  });

  it('names the consumer as the reason when none is given', () => {
    const state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    expect(apply(state, { type: 'deadLettered', atMs: 5, lease: 1, reason: '' })).toMatchObject({
      state: 'dlq',
      reason: 'dead-lettered by the consumer',
    });
  });

  it('refuses a stale lease and any state but Inflight', () => {
    const inflight = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    const stale = pushTransition(inflight, { type: 'deadLettered', atMs: 5, lease: 0, reason: 'x' }, context);
    expect(stale.ok ? 'moved' : stale.rejection.reason).toBe('staleLease');
    const ready = pushTransition(
      initialPushState(),
      { type: 'deadLettered', atMs: 5, lease: 0, reason: 'x' },
      context,
    );
    expect(ready.ok ? 'moved' : ready.rejection.reason).toBe('illegalTransition');
  });
});

describe('release (C2)', () => {
  it('returns the message to Ready without counting a failure', () => {
    let state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    state = apply(state, { type: 'released', atMs: 1, lease: 1 });
    expect(state).toEqual({ state: 'ready', failures: 0, releases: 1, lease: 1, firstDeliveredAtMs: 0 });
    state = apply(state, { type: 'delivered', atMs: 2, leaseDurationMs: LEASE_MS });
    expect(state).toMatchObject({ deliveryAttempt: 1, lease: 2 });
  });

  it('takes a release at or after the lease deadline as the timeout it has become (P2): it counts', () => {
    const state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: 100 });
    const late = pushTransition(state, { type: 'released', atMs: 100, lease: 1 }, context);
    const timedOut = pushTransition(state, { type: 'timedOut', atMs: 100, lease: 1 }, context);
    expect(late.ok && late.state).toEqual(timedOut.ok && timedOut.state);
    // Unlike the timer's own event, the release must also cancel the timer, which has not fired.
    expect(late.ok && late.effects.map((effect) => effect.type)).toEqual([
      'cancelLeaseTimer',
      'recordOutcome',
      'scheduleRetry',
      'adjustCounter',
      'adjustCounter',
    ]);
    expect(late.ok && late.effects[1]).toMatchObject({ outcome: 'timedOut', reason: 'consumption timeout' });
    expect(late).toMatchObject({
      ok: true,
      state: { state: 'waitingRetry', failures: 1, releases: 0, lastFailureReason: 'consumption timeout' },
    });
    const lastChance = { ...context, maxRetries: 0 };
    expect(pushTransition(state, { type: 'released', atMs: 150, lease: 1 }, lastChance)).toMatchObject({
      ok: true,
      state: { state: 'dlq', reason: 'consumption timeout' },
    });
  });

  it('never dead-letters however many releases happen', () => {
    const ctx = { ...context, maxRetries: 0 };
    let state = initialPushState();
    for (let i = 0; i < 50; i++) {
      state = apply(state, { type: 'delivered', atMs: i, leaseDurationMs: LEASE_MS }, ctx);
      state = apply(state, { type: 'released', atMs: i, lease: state.lease }, ctx);
    }
    expect(state).toMatchObject({ state: 'ready', releases: 50, failures: 0 });
  });
});

describe('rejections', () => {
  it('refuses a result for an earlier lease (a stale receipt)', () => {
    let state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    state = apply(state, { type: 'released', atMs: 1, lease: 1 });
    state = apply(state, { type: 'delivered', atMs: 2, leaseDurationMs: LEASE_MS });
    const stale = pushTransition(state, { type: 'succeeded', atMs: 3, lease: 1 }, context);
    expect(stale).toEqual({
      ok: false,
      rejection: {
        reason: 'staleLease',
        from: 'inflight',
        event: 'succeeded',
        message: 'lease 1 was replaced by lease 2',
      },
    });
  });

  it('keeps Commit and DLQ terminal', () => {
    let state = apply(initialPushState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });
    state = apply(state, { type: 'succeeded', atMs: 1, lease: 1 });
    for (const event of [
      { type: 'delivered', atMs: 2, leaseDurationMs: 1 },
      { type: 'succeeded', atMs: 2, lease: 1 },
      { type: 'failed', atMs: 2, lease: 1, reason: 'x' },
      { type: 'retryDue', atMs: 2 },
    ] as const) {
      const result = pushTransition(state, event, context);
      expect(result.ok ? result.state.state : result.rejection.reason).toBe('illegalTransition');
    }
  });

  it('refuses a zero lease', () => {
    const result = pushTransition(
      initialPushState(),
      { type: 'delivered', atMs: 0, leaseDurationMs: 0 },
      context,
    );
    expect(result.ok ? result.state.state : result.rejection.reason).toBe('invalidEvent');
  });
});
