import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BROADCAST_STATES,
  BROADCAST_TERMINAL_STATES,
  BROADCAST_TRANSITIONS,
  type BroadcastState,
  broadcastTransition,
  initialBroadcastState,
} from './broadcast-lifecycle.js';
import { broadcastEvent } from './lifecycle-arbitraries.fixture.js';

const runs = { numRuns: 2_000 };

describe('broadcast lifecycle properties', () => {
  it('only ever makes moves listed in BROADCAST_TRANSITIONS, delivers attempt 1 only, and stays Consumed', () => {
    fc.assert(
      fc.property(fc.array(broadcastEvent, { maxLength: 60 }), (events) => {
        let state: BroadcastState = initialBroadcastState();
        let consumed = false;
        for (const event of events) {
          const result = broadcastTransition(state, event);
          if (consumed) expect(result.ok).toBe(false);
          if (!result.ok) {
            expect(result.rejection.from).toBe(state.state);
            continue;
          }
          const next = result.state;
          expect(BROADCAST_TRANSITIONS).toContainEqual({
            from: state.state,
            event: event.type,
            to: next.state,
          });
          // B1: never retried, so never delivered as a second attempt; releases do not count (C2).
          if (next.state === 'inflight') expect(next.deliveryAttempt).toBe(1);
          expect(next.failures).toBeLessThanOrEqual(1);
          state = next;
          consumed = BROADCAST_TERMINAL_STATES.includes(state.state);
        }
        expect(BROADCAST_STATES).toContain(state.state);
      }),
      runs,
    );
  });

  it('can reach every edge of BROADCAST_TRANSITIONS', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(fc.array(broadcastEvent, { maxLength: 60 }), (events) => {
        let state: BroadcastState = initialBroadcastState();
        for (const event of events) {
          const result = broadcastTransition(state, event);
          if (!result.ok) continue;
          seen.add(`${state.state} ${event.type} ${result.state.state}`);
          state = result.state;
        }
      }),
      runs,
    );
    expect([...seen].sort()).toEqual(BROADCAST_TRANSITIONS.map((e) => `${e.from} ${e.event} ${e.to}`).sort());
  });
});
