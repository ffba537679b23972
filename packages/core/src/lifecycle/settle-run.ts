import type { GroupCounter } from './effects.js';
import {
  type PushEvent,
  type PushEventType,
  type PushLifecycleContext,
  type PushState,
  pushTransition,
} from './push-lifecycle.js';
import {
  type SimpleEvent,
  type SimpleEventType,
  type SimpleLifecycleContext,
  type SimpleState,
  simpleTransition,
} from './simple-lifecycle.js';
import type { Transition } from './transition.js';

/**
 * A run of settles: consumers' verdicts (acks, nacks, releases, …) on messages of one group and
 * one topic, in the order they arrived, decided in one step. Acks arrive in order and many at a
 * time (a settle frame carries up to 32 from a client's batcher), so what one-by-one settling
 * repeats per message is here done once per run: the committed offsets come back as runs of
 * offsets (the durable marks of a group that keeps no history of successes, one write), and the
 * group counters as one net move each.
 *
 * The decision is exactly what settling the same messages one by one would give: each settle is
 * decided by the machine's own transition, in order, from where its message stands after the
 * settles before it in the run (an offset may appear twice), with the same injected `random`
 * drawn in the same order. A refusal is a value, as for one settle, and changes nothing.
 */

/** One settle of a run: the message at `offset`, where it stands, and the event its consumer's verdict is. */
export interface RunSettle<TState, TEvent> {
  readonly offset: number;
  /** The message's state before the run (a later settle of the same offset starts after the earlier one). */
  readonly from: TState;
  readonly event: TEvent;
}

/** What a run decides. */
export interface RunDecision<TState extends { readonly state: string }, TEventType extends string> {
  /** Per settle, in order: exactly what its machine's transition returns for it after the settles before it. */
  readonly transitions: readonly Transition<TState, TEventType>[];
  /**
   * The offsets the run moved to Commit, as sorted, disjoint, non-touching runs
   * `[start, end, start, end, …]` (`end` exclusive): the run's durable marks.
   */
  readonly committed: readonly number[];
  /** Each group counter's net move: the sum of the accepted transitions' `adjustCounter` effects. */
  readonly counterMoves: Readonly<Record<GroupCounter, number>>;
}

/** Decide a run of settles of push deliveries (P1–P4, C2, D3, X4) in one step. */
export function decidePushRun(
  settles: readonly RunSettle<PushState, PushEvent>[],
  context: PushLifecycleContext,
): RunDecision<PushState, PushEventType> {
  return decideRun(settles, (from, event) => pushTransition(from, event, context));
}

/** Decide a run of settles of simple-consumer leases (S3, D3) in one step. */
export function decideSimpleRun(
  settles: readonly RunSettle<SimpleState, SimpleEvent>[],
  context: SimpleLifecycleContext,
): RunDecision<SimpleState, SimpleEventType> {
  return decideRun(settles, (from, event) => simpleTransition(from, event, context));
}

function decideRun<TState extends { readonly state: string }, TEvent, TEventType extends string>(
  settles: readonly RunSettle<TState, TEvent>[],
  transition: (from: TState, event: TEvent) => Transition<TState, TEventType>,
): RunDecision<TState, TEventType> {
  const transitions: Transition<TState, TEventType>[] = new Array(settles.length);
  const counterMoves = { inflight: 0, waitingRetry: 0, committed: 0, deadLettered: 0 };
  const committedOffsets: number[] = [];
  // Only an offset that comes again needs the state an earlier settle left: kept from the first
  // offset that does not rise, so the common run (offsets rising) allocates nothing for it.
  let moved: Map<number, TState> | undefined;
  let lastOffset = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < settles.length; i++) {
    const { offset, from, event } = settles[i] as RunSettle<TState, TEvent>;
    if (moved === undefined && offset <= lastOffset) moved = statesSoFar(settles, transitions, i);
    const result = transition(moved?.get(offset) ?? from, event);
    transitions[i] = result;
    lastOffset = Math.max(lastOffset, offset);
    if (!result.ok) continue;
    moved?.set(offset, result.state);
    if (result.state.state === 'commit') committedOffsets.push(offset);
    for (const effect of result.effects) {
      if (effect.type === 'adjustCounter') counterMoves[effect.counter] += effect.by;
    }
  }
  return { transitions, committed: offsetRunsOf(committedOffsets), counterMoves };
}

/** The state each offset reached by the settles before `end`. */
function statesSoFar<TState extends { readonly state: string }, TEvent, TEventType extends string>(
  settles: readonly RunSettle<TState, TEvent>[],
  transitions: readonly Transition<TState, TEventType>[],
  end: number,
): Map<number, TState> {
  const states = new Map<number, TState>();
  for (let i = 0; i < end; i++) {
    const result = transitions[i] as Transition<TState, TEventType>;
    if (result.ok) states.set((settles[i] as RunSettle<TState, TEvent>).offset, result.state);
  }
  return states;
}

/**
 * `offsets` (each once: a committed message leaves no state to commit again) as sorted runs
 * `[start, end, …]`. Acks arrive in order, so the sort is skipped when they are sorted already.
 */
function offsetRunsOf(offsets: number[]): number[] {
  if (offsets.length === 0) return offsets;
  let sorted = true;
  for (let i = 1; i < offsets.length && sorted; i++)
    sorted = (offsets[i] as number) > (offsets[i - 1] as number);
  if (!sorted) offsets.sort((a, b) => a - b);
  const runs: number[] = [];
  let start = offsets[0] as number;
  let end = start + 1;
  for (let i = 1; i < offsets.length; i++) {
    const offset = offsets[i] as number;
    if (offset === end) {
      end++;
      continue;
    }
    runs.push(start, end);
    start = offset;
    end = offset + 1;
  }
  runs.push(start, end);
  return runs;
}
