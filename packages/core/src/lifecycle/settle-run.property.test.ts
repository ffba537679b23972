import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { seededRandom } from '../random.js';
import type { DeliveryEffect, GroupCounter } from './effects.js';
import { maxRetries, policy, pushEvent, simpleEvent } from './lifecycle-arbitraries.fixture.js';
import { initialPushState, type PushEvent, type PushState, pushTransition } from './push-lifecycle.js';
import { decidePushRun, decideSimpleRun } from './settle-run.js';
import { initialSimpleState, type SimpleState, simpleTransition } from './simple-lifecycle.js';
import type { Transition } from './transition.js';

/**
 * Issue 43: a run decides exactly what the same messages settled one by one would. Each message
 * is first driven to a random state by a random history; then a random run of settles (offsets
 * rising, as acks arrive, or repeating and falling, as a confused client may send them) is decided
 * both ways, with two copies of one seeded `random`, and everything must agree: every transition
 * (state and effects, or the refusal), each message's final state, the committed offsets and the
 * counters' moves.
 */

const runs = { numRuns: 1_000 };

/** A message's history, and then the settles of it in the run: offsets are small, so they repeat. */
const settleOf = <TEvent>(event: fc.Arbitrary<TEvent>) =>
  fc.record({ offset: fc.integer({ min: 0, max: 12 }), event });

/** Settle one by one, as the engine did before runs: each from where its message stands now. */
function oneByOne<TState extends { readonly state: string }, TEvent>(
  starts: ReadonlyMap<number, TState>,
  settles: readonly { readonly offset: number; readonly event: TEvent }[],
  transition: (from: TState, event: TEvent) => Transition<TState, string>,
) {
  const states = new Map(starts);
  const transitions: Transition<TState, string>[] = [];
  const committed = new Set<number>();
  const counterMoves: Record<GroupCounter, number> = {
    inflight: 0,
    waitingRetry: 0,
    committed: 0,
    deadLettered: 0,
  };
  for (const { offset, event } of settles) {
    const result = transition(states.get(offset) as TState, event);
    transitions.push(result);
    if (!result.ok) continue;
    states.set(offset, result.state);
    if (result.state.state === 'commit') committed.add(offset);
    for (const effect of result.effects as readonly DeliveryEffect[]) {
      if (effect.type === 'adjustCounter') counterMoves[effect.counter] += effect.by;
    }
  }
  return { transitions, states, committed, counterMoves };
}

/** Drive every offset through its history, one by one, to the state the run starts from. */
function startingStates<TState extends { readonly state: string }, TEvent>(
  initial: () => TState,
  histories: readonly (readonly TEvent[])[],
  transition: (from: TState, event: TEvent) => Transition<TState, string>,
): Map<number, TState> {
  const states = new Map<number, TState>();
  for (const [offset, history] of histories.entries()) {
    let state = initial();
    for (const event of history) {
      const result = transition(state, event);
      if (result.ok) state = result.state;
    }
    states.set(offset, state);
  }
  return states;
}

/** The offsets `[start, end, …]` names, one by one. */
function offsetsOf(runsOfOffsets: readonly number[]): number[] {
  const offsets: number[] = [];
  for (let i = 0; i < runsOfOffsets.length; i += 2) {
    for (let offset = runsOfOffsets[i] as number; offset < (runsOfOffsets[i + 1] as number); offset++)
      offsets.push(offset);
  }
  return offsets;
}

const JITTERED = { type: 'exponential', initialMs: 10, multiplier: 2, maxMs: 1_000, jitter: 0.2 } as const;

/** Runs as the engine hands them over (rising offsets) half the time; any order the other half. */
const ordering = fc.boolean();

function arrange<T extends { readonly offset: number }>(settles: readonly T[], rising: boolean): T[] {
  if (!rising) return [...settles];
  const seen = new Set<number>();
  return [...settles]
    .sort((a, b) => a.offset - b.offset)
    .filter((settle) => !seen.has(settle.offset) && seen.add(settle.offset));
}

/** The run decision agrees with one-by-one settling in every respect the engine applies. */
function expectSameDecision<TState extends { readonly state: string }>(
  starts: ReadonlyMap<number, TState>,
  run: {
    readonly transitions: readonly Transition<TState, string>[];
    readonly committed: readonly number[];
    readonly counterMoves: Readonly<Record<GroupCounter, number>>;
  },
  single: ReturnType<typeof oneByOne<TState, unknown>>,
  settles: readonly { readonly offset: number }[],
): void {
  expect(run.transitions).toEqual(single.transitions);
  expect(run.counterMoves).toEqual(single.counterMoves);
  // The marks are sorted, disjoint runs that do not touch, and hold exactly the committed offsets.
  for (let i = 0; i < run.committed.length; i += 2) {
    expect(run.committed[i] as number).toBeLessThan(run.committed[i + 1] as number);
    if (i > 0) expect(run.committed[i] as number).toBeGreaterThan(run.committed[i - 1] as number);
  }
  expect(offsetsOf(run.committed)).toEqual([...single.committed].sort((a, b) => a - b));
  // Each message ends where one-by-one settling leaves it.
  const finals = new Map(starts);
  for (const [i, { offset }] of settles.entries()) {
    const result = run.transitions[i] as Transition<TState, string>;
    if (result.ok) finals.set(offset, result.state);
  }
  expect(finals).toEqual(single.states);
}

describe('settle runs (issue 43)', () => {
  it('a push run decides exactly what settling its messages one by one decides', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(pushEvent, { maxLength: 8 }), { minLength: 13, maxLength: 13 }),
        fc.array(settleOf(pushEvent), { maxLength: 40 }),
        policy,
        maxRetries,
        fc.integer(),
        ordering,
        fc.boolean(),
        (histories, drawn, drawnPolicy, max, seed, rising, jitter) => {
          // Jitter (X3) draws from `random`: with it on, both ways must draw the same numbers in
          // the same order, from two copies of one seeded sequence.
          const retryPolicy = jitter ? JITTERED : drawnPolicy;
          const contextOf = () => ({ retryPolicy, maxRetries: max, random: seededRandom(seed) });
          const history = contextOf();
          const starts = startingStates(initialPushState, histories, (from: PushState, event: PushEvent) =>
            pushTransition(from, event, history),
          );
          const settles = arrange(drawn, rising);
          const singleContext = contextOf();
          const single = oneByOne(starts, settles, (from: PushState, event: PushEvent) =>
            pushTransition(from, event, singleContext),
          );
          const run = decidePushRun(
            settles.map(({ offset, event }) => ({ offset, from: starts.get(offset) as PushState, event })),
            contextOf(),
          );
          expectSameDecision(starts, run, single, settles);
        },
      ),
      runs,
    );
  });

  it('a simple run decides exactly what settling its leases one by one decides', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(simpleEvent, { maxLength: 8 }), { minLength: 13, maxLength: 13 }),
        fc.array(settleOf(simpleEvent), { maxLength: 40 }),
        maxRetries,
        ordering,
        (histories, drawn, max, rising) => {
          const context = { maxRetries: max };
          const simple = (from: SimpleState, event: (typeof drawn)[number]['event']) =>
            simpleTransition(from, event, context);
          const starts = startingStates(initialSimpleState, histories, simple);
          const settles = arrange(drawn, rising);
          const single = oneByOne(starts, settles, simple);
          const run = decideSimpleRun(
            settles.map(({ offset, event }) => ({ offset, from: starts.get(offset) as SimpleState, event })),
            context,
          );
          expectSameDecision(starts, run, single, settles);
        },
      ),
      runs,
    );
  });

  it('commits a rising run of acks as one run of offsets, and moves each counter once by its size', () => {
    const context = { retryPolicy: { type: 'fixed' as const, delayMs: 1_000 }, maxRetries: 3 };
    const inflight = (lease: number): PushState => ({
      state: 'inflight',
      leaseDeadlineMs: 10_000,
      deliveryAttempt: 1,
      failures: 0,
      releases: 0,
      lease,
    });
    const offsets = [100, 101, 102, 103, 105];
    const run = decidePushRun(
      offsets.map((offset) => ({
        offset,
        from: inflight(1),
        event: { type: 'succeeded', atMs: 5_000, lease: 1 },
      })),
      context,
    );
    expect(run.committed).toEqual([100, 104, 105, 106]);
    expect(run.counterMoves).toEqual({ inflight: -5, waitingRetry: 0, committed: 5, deadLettered: 0 });
    // A failure in the run is decided as it would be alone: WaitingRetry, not a mark.
    const mixed = decidePushRun(
      [
        { offset: 7, from: inflight(2), event: { type: 'succeeded', atMs: 5_000, lease: 2 } },
        { offset: 8, from: inflight(1), event: { type: 'failed', atMs: 5_000, lease: 1, reason: 'FAILURE' } },
        { offset: 9, from: inflight(1), event: { type: 'succeeded', atMs: 5_000, lease: 9 } },
      ],
      context,
    );
    expect(mixed.committed).toEqual([7, 8]);
    expect(mixed.transitions.map((t) => (t.ok ? t.state.state : t.rejection.reason))).toEqual([
      'commit',
      'waitingRetry',
      'staleLease',
    ]);
    expect(mixed.counterMoves).toEqual({ inflight: -2, waitingRetry: 1, committed: 1, deadLettered: 0 });
  });
});
