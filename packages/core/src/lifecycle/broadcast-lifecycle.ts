import { assertNever } from '../assert-never.js';
import { withEffects } from './effects.js';
import { CONSUMPTION_TIMEOUT_REASON, checkLease, commitLease, startLease } from './lease-steps.js';
import {
  type DeliveryCounters,
  illegalTransition,
  initialReadyState,
  type ReadyState,
  reject,
  type Step,
  type Transition,
  type TransitionEdge,
  withCounters,
} from './transition.js';

/** How a broadcast delivery ended for its instance. */
export type BroadcastOutcome = 'succeeded' | 'failed' | 'timedOut';

/**
 * Where a message stands for one instance of a broadcasting group (rule B1):
 * Ready → Inflight → Consumed, and Inflight → Ready on a release. A failure is never retried, as in
 * RocketMQ 4.x broadcasting: failed, thrown or timed out, the message is Consumed for that instance
 * with its outcome recorded, and the instance moves on.
 */
export type BroadcastState =
  | ReadyState
  | ({
      readonly state: 'inflight';
      /** When the consumption timeout fails this delivery (P2). */
      readonly leaseDeadlineMs: number;
      /** Always 1: a broadcast message is delivered to an instance until it is consumed once (P6). */
      readonly deliveryAttempt: number;
    } & DeliveryCounters)
  | ({
      readonly state: 'consumed';
      readonly outcome: BroadcastOutcome;
      /** Why it failed; absent on success. */
      readonly reason?: string;
    } & DeliveryCounters);

/** The name of a broadcast state. */
export type BroadcastStateName = BroadcastState['state'];

/** What can happen to a message delivered to a broadcast instance. Times are epoch ms. */
export type BroadcastEvent =
  /** The broker hands the message to the instance, leased for `leaseDurationMs`. */
  | { readonly type: 'delivered'; readonly atMs: number; readonly leaseDurationMs: number }
  /** The listener returned SUCCESS. */
  | { readonly type: 'succeeded'; readonly atMs: number; readonly lease: number }
  /** The listener returned FAILURE, threw, or dead-lettered the message: not retried. */
  | { readonly type: 'failed'; readonly atMs: number; readonly lease: number; readonly reason: string }
  /** The lease passed its deadline without a result (P2): not retried. */
  | { readonly type: 'timedOut'; readonly atMs: number; readonly lease: number }
  /** The instance handed the message back unprocessed, e.g. on disconnect (C2). */
  | { readonly type: 'released'; readonly atMs: number; readonly lease: number };

/** The name of a broadcast event. */
export type BroadcastEventType = BroadcastEvent['type'];

/** The result of {@link broadcastTransition}. */
export type BroadcastTransition = Transition<BroadcastState, BroadcastEventType>;

/** Every state a broadcast message can be in for one instance, in lifecycle order. */
export const BROADCAST_STATES: readonly BroadcastStateName[] = ['ready', 'inflight', 'consumed'];

/** Consumed ends the lifecycle: no event leaves it. */
export const BROADCAST_TERMINAL_STATES: readonly BroadcastStateName[] = ['consumed'];

/** Every move {@link broadcastTransition} can make; docs/protocol/state-machines.md draws exactly these. */
export const BROADCAST_TRANSITIONS: readonly TransitionEdge<BroadcastStateName, BroadcastEventType>[] = [
  { from: 'ready', event: 'delivered', to: 'inflight' },
  { from: 'inflight', event: 'succeeded', to: 'consumed' },
  { from: 'inflight', event: 'failed', to: 'consumed' },
  { from: 'inflight', event: 'timedOut', to: 'consumed' },
  { from: 'inflight', event: 'released', to: 'ready' },
  { from: 'inflight', event: 'released', to: 'consumed' },
];

/** The state of a message an instance has not been delivered yet. */
export function initialBroadcastState(): BroadcastState {
  return initialReadyState();
}

/**
 * Apply one event to a message for one broadcast instance. A release at or after the lease's
 * deadline is the timeout it has already become (P2), so a consumer that hangs and then
 * disconnects is recorded as timed out, not handed the message again.
 */
export function broadcastTransition(current: BroadcastState, event: BroadcastEvent): BroadcastTransition {
  return withEffects(current, nextBroadcastState(current, event), event.type);
}

function nextBroadcastState(
  current: BroadcastState,
  event: BroadcastEvent,
): Step<BroadcastState, BroadcastEventType> {
  switch (event.type) {
    case 'delivered':
      return startLease(current, event, event.leaseDurationMs, 'leaseDurationMs');
    case 'succeeded': {
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      const committed = commitLease(current, event);
      if (!committed.ok) return committed;
      return { ok: true, state: withCounters({ state: 'consumed', outcome: 'succeeded' }, current) };
    }
    case 'failed': {
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      const leaseProblem = checkLease(current, event, false);
      if (leaseProblem) return leaseProblem;
      return { ok: true, state: consumedByFailure(current, 'failed', event.reason) };
    }
    case 'timedOut': {
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      const leaseProblem = checkLease(current, event, false);
      if (leaseProblem) return leaseProblem;
      if (event.atMs < current.leaseDeadlineMs) {
        return reject('notDue', current.state, event.type, `the lease runs until ${current.leaseDeadlineMs}`);
      }
      return { ok: true, state: consumedByFailure(current, 'timedOut', CONSUMPTION_TIMEOUT_REASON) };
    }
    case 'released': {
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      const leaseProblem = checkLease(current, event, false);
      if (leaseProblem) return leaseProblem;
      if (event.atMs >= current.leaseDeadlineMs) {
        return { ok: true, state: consumedByFailure(current, 'timedOut', CONSUMPTION_TIMEOUT_REASON) };
      }
      return {
        ok: true,
        state: withCounters({ state: 'ready' }, current, { releases: current.releases + 1 }),
      };
    }
    default:
      return assertNever(event, 'broadcast event');
  }
}

function consumedByFailure(
  current: BroadcastState & { readonly state: 'inflight' },
  outcome: 'failed' | 'timedOut',
  reason: string,
): BroadcastState {
  return withCounters({ state: 'consumed', outcome, reason }, current, {
    failures: current.failures + 1,
    lastFailureReason: reason,
  });
}
