import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type BroadcastState, broadcastTransition, initialBroadcastState } from './broadcast-lifecycle.js';
import type { DeliveryEffect, GroupCounter } from './effects.js';
import {
  broadcastEvent,
  maxRetries,
  policy,
  pushEvent,
  simpleEvent,
} from './lifecycle-arbitraries.fixture.js';
import { initialPushState, type PushState, pushTransition } from './push-lifecycle.js';
import { initialSimpleState, type SimpleState, simpleTransition } from './simple-lifecycle.js';
import type { Transition } from './transition.js';

type AnyState = PushState | SimpleState | BroadcastState;

/**
 * What a broker that carries out every effect and nothing else holds for one message: its counters,
 * its live lease timer, its retry timer, whether it sits in the ready queue, and what it recorded.
 */
class EffectLedger {
  readonly counters: Record<GroupCounter, number> = {
    inflight: 0,
    waitingRetry: 0,
    committed: 0,
    deadLettered: 0,
  };
  leaseTimer: { lease: number; deadlineMs: number } | undefined;
  retryAtMs: number | undefined;
  queued = 0;
  readonly recordedLeases: number[] = [];
  deadLetters = 0;
  fifoReleases = 0;

  apply(eventType: string, effects: readonly DeliveryEffect[]): void {
    // A timer event is the timer firing: it is gone before its effects run.
    if (eventType === 'timedOut' || eventType === 'leaseExpired') this.leaseTimer = undefined;
    if (eventType === 'retryDue') this.retryAtMs = undefined;
    if (eventType === 'delivered') this.queued = Math.max(0, this.queued - 1);
    for (const effect of effects) {
      switch (effect.type) {
        case 'startLeaseTimer':
          expect(this.leaseTimer).toBeUndefined();
          this.leaseTimer = { lease: effect.lease, deadlineMs: effect.deadlineMs };
          break;
        case 'cancelLeaseTimer':
          expect(this.leaseTimer).toBeDefined();
          this.leaseTimer = undefined;
          break;
        case 'scheduleRetry':
          this.retryAtMs = effect.atMs;
          break;
        case 'requeue':
          this.queued++;
          break;
        case 'recordOutcome':
          this.recordedLeases.push(effect.lease);
          break;
        case 'deadLetter':
          this.deadLetters++;
          break;
        case 'releaseFifoKey':
          this.fifoReleases++;
          break;
        case 'adjustCounter':
          this.counters[effect.counter] += effect.by;
          break;
      }
    }
  }

  /** Everything the broker holds agrees with the state core says the message is in. */
  expectConsistentWith(state: AnyState): void {
    expect(this.counters.inflight).toBe(state.state === 'inflight' ? 1 : 0);
    expect(this.counters.waitingRetry).toBe(state.state === 'waitingRetry' ? 1 : 0);
    const succeeded =
      state.state === 'commit' || (state.state === 'consumed' && state.outcome === 'succeeded');
    expect(this.counters.committed).toBe(succeeded ? 1 : 0);
    expect(this.counters.deadLettered).toBe(state.state === 'dlq' ? 1 : 0);
    expect(this.deadLetters).toBe(state.state === 'dlq' ? 1 : 0);
    const done = state.state === 'commit' || state.state === 'dlq' || state.state === 'consumed';
    expect(this.fifoReleases).toBe(done ? 1 : 0);
    if (state.state === 'inflight') {
      expect(this.leaseTimer).toEqual({ lease: state.lease, deadlineMs: state.leaseDeadlineMs });
    } else {
      expect(this.leaseTimer).toBeUndefined();
    }
    if (state.state === 'waitingRetry') expect(this.retryAtMs).toBe(state.retryAtMs);
    // Ready again after a delivery means queued; the first Ready comes from the log, not the queue.
    expect(this.queued).toBe(state.state === 'ready' && state.lease > 0 ? 1 : 0);
    // A delivery's outcome is recorded once, in lease order, when the delivery ends (a change of
    // invisibility replaces a lease without ending the delivery).
    expect(this.recordedLeases).toEqual([...new Set(this.recordedLeases)].sort((a, b) => a - b));
    if (state.state !== 'inflight' && state.lease > 0) expect(this.recordedLeases.at(-1)).toBe(state.lease);
    if (state.state === 'inflight') expect(this.recordedLeases.at(-1) ?? 0).toBeLessThan(state.lease);
  }
}

function walk<TState extends AnyState, TEvent extends { readonly type: string }>(
  initial: TState,
  events: readonly TEvent[],
  transition: (state: TState, event: TEvent) => Transition<TState, string>,
): void {
  const ledger = new EffectLedger();
  let state = initial;
  for (const event of events) {
    const result = transition(state, event);
    if (!result.ok) continue;
    ledger.apply(event.type, result.effects);
    state = result.state;
    ledger.expectConsistentWith(state);
  }
}

const runs = { numRuns: 1_500 };

describe('lifecycle effects', () => {
  it('push: carrying out the effects alone keeps counters, timers, queue and history in step', () => {
    fc.assert(
      fc.property(fc.array(pushEvent, { maxLength: 60 }), policy, maxRetries, (events, retryPolicy, max) => {
        const context = { retryPolicy, maxRetries: max, random: () => 0.5 };
        walk(initialPushState(), events, (state, event) => pushTransition(state, event, context));
      }),
      runs,
    );
  });

  it('simple: carrying out the effects alone keeps counters, timers, queue and history in step', () => {
    fc.assert(
      fc.property(fc.array(simpleEvent, { maxLength: 60 }), maxRetries, (events, max) => {
        walk(initialSimpleState(), events, (state, event) =>
          simpleTransition(state, event, { maxRetries: max }),
        );
      }),
      runs,
    );
  });

  it('broadcast: carrying out the effects alone keeps counters, timers, queue and history in step', () => {
    fc.assert(
      fc.property(fc.array(broadcastEvent, { maxLength: 60 }), (events) => {
        walk(initialBroadcastState(), events, broadcastTransition);
      }),
      runs,
    );
  });
});
