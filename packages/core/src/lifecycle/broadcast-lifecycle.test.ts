import { describe, expect, it } from 'vitest';
import {
  type BroadcastEvent,
  type BroadcastState,
  broadcastTransition,
  initialBroadcastState,
} from './broadcast-lifecycle.js';

const LEASE_MS = 1_000;

function apply(state: BroadcastState, event: BroadcastEvent): BroadcastState {
  const result = broadcastTransition(state, event);
  if (!result.ok) throw new Error(`rejected: ${result.rejection.message}`);
  return result.state;
}

function outcome(state: BroadcastState, event: BroadcastEvent): string {
  const result = broadcastTransition(state, event);
  return result.ok ? result.state.state : result.rejection.reason;
}

const delivered = (): BroadcastState =>
  apply(initialBroadcastState(), { type: 'delivered', atMs: 0, leaseDurationMs: LEASE_MS });

describe('broadcast lifecycle (B1)', () => {
  it('consumes a message on success', () => {
    expect(delivered()).toMatchObject({
      state: 'inflight',
      lease: 1,
      deliveryAttempt: 1,
      leaseDeadlineMs: LEASE_MS,
    });
    expect(apply(delivered(), { type: 'succeeded', atMs: 5, lease: 1 })).toMatchObject({
      state: 'consumed',
      outcome: 'succeeded',
      failures: 0,
    });
  });

  it('never retries: a failure or a timeout consumes the message, with its reason', () => {
    expect(apply(delivered(), { type: 'failed', atMs: 5, lease: 1, reason: 'boom' })).toMatchObject({
      state: 'consumed',
      outcome: 'failed',
      reason: 'boom',
      failures: 1,
    });
    expect(outcome(delivered(), { type: 'timedOut', atMs: LEASE_MS - 1, lease: 1 })).toBe('notDue');
    expect(apply(delivered(), { type: 'timedOut', atMs: LEASE_MS, lease: 1 })).toMatchObject({
      state: 'consumed',
      outcome: 'timedOut',
      reason: 'consumption timeout',
    });
  });

  it('makes a released message Ready for the same instance, delivered again as attempt 1 (C2)', () => {
    const ready = apply(delivered(), { type: 'released', atMs: 5, lease: 1 });
    expect(ready).toMatchObject({ state: 'ready', releases: 1, failures: 0 });
    expect(apply(ready, { type: 'delivered', atMs: 10, leaseDurationMs: LEASE_MS })).toMatchObject({
      state: 'inflight',
      lease: 2,
      deliveryAttempt: 1,
    });
  });

  it('records a release at or after the deadline as the timeout it already is', () => {
    expect(apply(delivered(), { type: 'released', atMs: LEASE_MS, lease: 1 })).toMatchObject({
      state: 'consumed',
      outcome: 'timedOut',
    });
  });

  it('refuses a late success, a stale lease, and anything after Consumed', () => {
    expect(outcome(delivered(), { type: 'succeeded', atMs: LEASE_MS, lease: 1 })).toBe('leaseExpired');
    expect(outcome(delivered(), { type: 'failed', atMs: 5, lease: 2, reason: 'x' })).toBe('staleLease');
    const consumed = apply(delivered(), { type: 'succeeded', atMs: 5, lease: 1 });
    expect(outcome(consumed, { type: 'released', atMs: 6, lease: 1 })).toBe('illegalTransition');
  });
});
