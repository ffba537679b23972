import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { maxRetries, policy, pushEvent, simpleEvent } from './lifecycle-arbitraries.fixture.js';
import {
  initialPushState,
  PUSH_STATES,
  PUSH_TERMINAL_STATES,
  PUSH_TRANSITIONS,
  type PushState,
  pushTransition,
} from './push-lifecycle.js';
import {
  initialSimpleState,
  SIMPLE_STATES,
  SIMPLE_TERMINAL_STATES,
  SIMPLE_TRANSITIONS,
  type SimpleState,
  simpleTransition,
} from './simple-lifecycle.js';

/**
 * P4/S5: the failure of delivery `maxRetries + 1` dead-letters, and nothing else does — but the
 * consumer's own dead-letter (D3), which may come at any attempt.
 */
function expectDlqRule(next: PushState | SimpleState, eventType: string, max: number): void {
  if (next.failures === max + 1) expect(next.state).toBe('dlq');
  if (next.state === 'dlq' && eventType !== 'deadLettered') expect(next.failures).toBe(max + 1);
}
const runs = { numRuns: 2_000 };
/**
 * The reachability checks run a fixed sequence: some edges (a release after the deadline of the
 * last attempt) need several lucky draws in a row, and a check of the generators must not flake.
 */
const reachRuns = { numRuns: 3_000, seed: 20_261_123 };

describe('push lifecycle properties', () => {
  it('only ever makes moves listed in PUSH_TRANSITIONS and keeps its invariants', () => {
    fc.assert(
      fc.property(fc.array(pushEvent, { maxLength: 60 }), policy, maxRetries, (events, retryPolicy, max) => {
        const context = { retryPolicy, maxRetries: max, random: () => 0.5 };
        let state: PushState = initialPushState();
        let countedDeliveries = 0;
        for (const event of events) {
          const result = pushTransition(state, event, context);
          if (!result.ok) {
            // A rejection names the state it was refused in; the state itself stays put.
            expect(result.rejection.from).toBe(state.state);
            continue;
          }
          const next = result.state;
          expect(PUSH_TRANSITIONS).toContainEqual({ from: state.state, event: event.type, to: next.state });
          expect(PUSH_TERMINAL_STATES).not.toContain(state.state);
          if (next.state === 'inflight') {
            // P6: the attempt shown to the consumer counts failures only, never releases (C2).
            expect(next.deliveryAttempt).toBe(next.failures + 1);
            countedDeliveries = next.failures + 1;
          }
          expect(next.failures).toBeLessThanOrEqual(max + 1);
          expectDlqRule(next, event.type, max);
          state = next;
        }
        // P4: never more than maxRetries + 1 deliveries that count.
        expect(countedDeliveries).toBeLessThanOrEqual(max + 1);
        expect(PUSH_STATES).toContain(state.state);
      }),
      runs,
    );
  });

  it('keeps Commit and DLQ terminal: every later event is rejected', () => {
    fc.assert(
      fc.property(fc.array(pushEvent, { maxLength: 60 }), policy, maxRetries, (events, retryPolicy, max) => {
        const context = { retryPolicy, maxRetries: max, random: () => 0.5 };
        let state: PushState = initialPushState();
        let terminal: PushState | undefined;
        for (const event of events) {
          const result = pushTransition(state, event, context);
          if (terminal) {
            expect(result.ok).toBe(false);
            continue;
          }
          if (result.ok) state = result.state;
          if (PUSH_TERMINAL_STATES.includes(state.state)) terminal = state;
        }
      }),
      runs,
    );
  });

  it('can reach every edge of PUSH_TRANSITIONS', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(fc.array(pushEvent, { maxLength: 60 }), policy, maxRetries, (events, retryPolicy, max) => {
        let state: PushState = initialPushState();
        for (const event of events) {
          const result = pushTransition(state, event, { retryPolicy, maxRetries: max, random: () => 0.5 });
          if (!result.ok) continue;
          seen.add(`${state.state} ${event.type} ${result.state.state}`);
          state = result.state;
        }
      }),
      reachRuns,
    );
    expect([...seen].sort()).toEqual(PUSH_TRANSITIONS.map((e) => `${e.from} ${e.event} ${e.to}`).sort());
  });
});

describe('simple lifecycle properties', () => {
  it('only ever makes moves listed in SIMPLE_TRANSITIONS and keeps its invariants', () => {
    fc.assert(
      fc.property(fc.array(simpleEvent, { maxLength: 60 }), maxRetries, (events, max) => {
        let state: SimpleState = initialSimpleState();
        let terminalSeen = false;
        for (const event of events) {
          const result = simpleTransition(state, event, { maxRetries: max });
          if (terminalSeen) expect(result.ok).toBe(false);
          if (!result.ok) continue;
          const next = result.state;
          expect(SIMPLE_TRANSITIONS).toContainEqual({ from: state.state, event: event.type, to: next.state });
          if (next.state === 'inflight') expect(next.deliveryAttempt).toBeLessThanOrEqual(max + 1);
          expectDlqRule(next, event.type, max);
          state = next;
          if (SIMPLE_TERMINAL_STATES.includes(state.state)) terminalSeen = true;
        }
        expect(SIMPLE_STATES).toContain(state.state);
      }),
      runs,
    );
  });

  it('can reach every edge of SIMPLE_TRANSITIONS', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(fc.array(simpleEvent, { maxLength: 60 }), maxRetries, (events, max) => {
        let state: SimpleState = initialSimpleState();
        for (const event of events) {
          const result = simpleTransition(state, event, { maxRetries: max });
          if (!result.ok) continue;
          seen.add(`${state.state} ${event.type} ${result.state.state}`);
          state = result.state;
        }
      }),
      reachRuns,
    );
    expect([...seen].sort()).toEqual(SIMPLE_TRANSITIONS.map((e) => `${e.from} ${e.event} ${e.to}`).sort());
  });
});
