import { describe, expect, it } from 'vitest';
import {
  initialSimpleState,
  type SimpleEvent,
  type SimpleState,
  simpleTransition,
} from './simple-lifecycle.js';

const context = { maxRetries: 16 };

function apply(state: SimpleState, event: SimpleEvent, ctx = context): SimpleState {
  const result = simpleTransition(state, event, ctx);
  if (!result.ok) throw new Error(`rejected: ${result.rejection.message}`);
  return result.state;
}

function outcome(state: SimpleState, event: SimpleEvent, ctx = context): string {
  const result = simpleTransition(state, event, ctx);
  return result.ok ? result.state.state : result.rejection.reason;
}

describe('simple lifecycle (S1, S2)', () => {
  it('leases until now + invisibleDuration and commits on ack', () => {
    let state = apply(initialSimpleState(), { type: 'delivered', atMs: 1_000, invisibleDurationMs: 30 });
    expect(state).toMatchObject({ state: 'inflight', leaseDeadlineMs: 1_030, lease: 1, deliveryAttempt: 1 });
    state = apply(state, { type: 'succeeded', atMs: 1_029, lease: 1 });
    expect(state.state).toBe('commit');
  });

  it('returns an unacked message to Ready at its deadline, counting the attempt', () => {
    let state = apply(initialSimpleState(), { type: 'delivered', atMs: 0, invisibleDurationMs: 30 });
    expect(outcome(state, { type: 'leaseExpired', atMs: 29, lease: 1 })).toBe('notDue');
    state = apply(state, { type: 'leaseExpired', atMs: 30, lease: 1 });
    expect(state).toMatchObject({ state: 'ready', failures: 1 });
    state = apply(state, { type: 'delivered', atMs: 30, invisibleDurationMs: 30 });
    expect(state).toMatchObject({ deliveryAttempt: 2, lease: 2 });
  });
});

describe('ack (S3)', () => {
  it('fails once the deadline has passed, and the message is not committed', () => {
    const state = apply(initialSimpleState(), { type: 'delivered', atMs: 0, invisibleDurationMs: 30 });
    expect(outcome(state, { type: 'succeeded', atMs: 30, lease: 1 })).toBe('leaseExpired');
  });

  it('cannot commit twice', () => {
    let state = apply(initialSimpleState(), { type: 'delivered', atMs: 0, invisibleDurationMs: 30 });
    state = apply(state, { type: 'succeeded', atMs: 1, lease: 1 });
    expect(outcome(state, { type: 'succeeded', atMs: 2, lease: 1 })).toBe('illegalTransition');
  });
});

describe('changeInvisibleDuration (S4)', () => {
  it('sets the deadline to now + ms under a new lease; the old lease stops working', () => {
    let state = apply(initialSimpleState(), { type: 'delivered', atMs: 0, invisibleDurationMs: 30 });
    state = apply(state, { type: 'invisibilityChanged', atMs: 20, lease: 1, invisibleDurationMs: 100 });
    expect(state).toMatchObject({ state: 'inflight', lease: 2, leaseDeadlineMs: 120, deliveryAttempt: 1 });
    expect(outcome(state, { type: 'succeeded', atMs: 21, lease: 1 })).toBe('staleLease');
    expect(outcome(state, { type: 'succeeded', atMs: 119, lease: 2 })).toBe('commit');
  });

  it('works only while the lease is live and unacked', () => {
    const state = apply(initialSimpleState(), { type: 'delivered', atMs: 0, invisibleDurationMs: 30 });
    expect(outcome(state, { type: 'invisibilityChanged', atMs: 30, lease: 1, invisibleDurationMs: 10 })).toBe(
      'leaseExpired',
    );
    const committed = apply(state, { type: 'succeeded', atMs: 1, lease: 1 });
    expect(
      outcome(committed, { type: 'invisibilityChanged', atMs: 2, lease: 1, invisibleDurationMs: 10 }),
    ).toBe('illegalTransition');
  });

  it('accepts 0 ms: the message becomes visible at once', () => {
    const state = apply(initialSimpleState(), { type: 'delivered', atMs: 0, invisibleDurationMs: 30 });
    const changed = apply(state, { type: 'invisibilityChanged', atMs: 5, lease: 1, invisibleDurationMs: 0 });
    expect(outcome(changed, { type: 'leaseExpired', atMs: 5, lease: 2 })).toBe('ready');
  });
});

describe('DLQ (S5)', () => {
  it('dead-letters when the lease of delivery maxRetries + 1 expires', () => {
    const ctx = { maxRetries: 2 };
    let state = initialSimpleState();
    let deliveries = 0;
    for (let i = 0; i < 10 && state.state !== 'dlq'; i++) {
      state = apply(state, { type: 'delivered', atMs: i * 10, invisibleDurationMs: 10 }, ctx);
      deliveries += 1;
      state = apply(state, { type: 'leaseExpired', atMs: i * 10 + 10, lease: state.lease }, ctx);
    }
    expect(deliveries).toBe(3);
    expect(state).toMatchObject({
      state: 'dlq',
      failures: 3,
      reason: 'invisible duration expired without ack',
    });
  });
});

describe('dead-letter now (D3)', () => {
  it('moves a live lease to the DLQ at once with its reason, counting the attempt', () => {
    const state = apply(initialSimpleState(), { type: 'delivered', atMs: 1_000, invisibleDurationMs: 30 });
    expect(apply(state, { type: 'deadLettered', atMs: 1_010, lease: 1, reason: 'bad schema' })).toMatchObject(
      {
        state: 'dlq',
        reason: 'bad schema',
        failures: 1,
      },
    );
  });

  it('refuses it after the lease deadline, as an ack is refused (S3)', () => {
    const state = apply(initialSimpleState(), { type: 'delivered', atMs: 1_000, invisibleDurationMs: 30 });
    expect(outcome(state, { type: 'deadLettered', atMs: 1_030, lease: 1, reason: 'late' })).toBe(
      'leaseExpired',
    );
  });
});

describe('release of a simple lease (C2 for leases nobody received)', () => {
  it('makes the message Ready at once without counting the attempt: the next lease is the same attempt', () => {
    let state = apply(initialSimpleState(), { type: 'delivered', atMs: 0, invisibleDurationMs: 10_000 });
    state = apply(state, { type: 'released', atMs: 5, lease: 1 });
    expect(state).toMatchObject({ state: 'ready', failures: 0, releases: 1 });
    state = apply(state, { type: 'delivered', atMs: 6, invisibleDurationMs: 10_000 });
    expect(state).toMatchObject({ state: 'inflight', deliveryAttempt: 1, lease: 2 });
    // The old lease is gone with its release.
    expect(outcome(state, { type: 'released', atMs: 7, lease: 1 })).toBe('staleLease');
  });

  it('counts a release at or past the deadline as the expiry it already was, to the DLQ on the last attempt (S5)', () => {
    let state = apply(initialSimpleState(), { type: 'delivered', atMs: 0, invisibleDurationMs: 30 });
    state = apply(state, { type: 'released', atMs: 30, lease: 1 });
    expect(state).toMatchObject({ state: 'ready', failures: 1, releases: 0 });
    state = apply(state, { type: 'delivered', atMs: 31, invisibleDurationMs: 30 }, { maxRetries: 1 });
    expect(apply(state, { type: 'released', atMs: 61, lease: 2 }, { maxRetries: 1 }).state).toBe('dlq');
  });
});
