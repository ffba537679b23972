import { assertNever } from '../assert-never.js';
import { retryBudgetSpent } from './dead-letter-cause.js';
import { withEffects } from './effects.js';
import {
  checkLease,
  commitLease,
  type DeadLetteredState,
  deadLettered,
  deadLetterLease,
  failureCounted,
  isDurationMs,
  startLease,
} from './lease-steps.js';
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

/** The shortest lease a receive may ask for (rule S2; the seeds' own example uses 20–30 ms). */
export const MIN_INVISIBLE_DURATION_MS = 10;
/** The longest lease a receive or a change of invisibility may ask for: 12 h (S2, S4). */
export const MAX_INVISIBLE_DURATION_MS = 12 * 60 * 60 * 1_000;

/**
 * Where a message stands for one simple-consuming group (rule S1):
 * Ready → Inflight → Commit | Ready (lease expired, or released) | DLQ. There is no WaitingRetry: the retry
 * interval is what is left of the invisible duration.
 */
export type SimpleState =
  | ReadyState
  | ({
      readonly state: 'inflight';
      /** The message becomes visible again at this time unless acked (S2). */
      readonly leaseDeadlineMs: number;
      /** 1 on the first delivery (P6 applies to simple consumers too). */
      readonly deliveryAttempt: number;
    } & DeliveryCounters)
  | ({ readonly state: 'commit' } & DeliveryCounters)
  | DeadLetteredState;

/** The name of a simple state. */
export type SimpleStateName = SimpleState['state'];

/** What can happen to a simple-consumed message. */
export type SimpleEvent =
  /** A `receive` leases the message until `atMs + invisibleDurationMs`. */
  | { readonly type: 'delivered'; readonly atMs: number; readonly invisibleDurationMs: number }
  /** `ack` while the lease is live (S3). */
  | { readonly type: 'succeeded'; readonly atMs: number; readonly lease: number }
  /** `changeInvisibleDuration` while the lease is live: a new lease until `atMs + invisibleDurationMs` (S4). */
  | {
      readonly type: 'invisibilityChanged';
      readonly atMs: number;
      readonly lease: number;
      readonly invisibleDurationMs: number;
    }
  /** `deadLetter` while the lease is live: to the DLQ now, whatever attempts remain (D3). */
  | { readonly type: 'deadLettered'; readonly atMs: number; readonly lease: number; readonly reason: string }
  /** The lease reached its deadline unacked. */
  | { readonly type: 'leaseExpired'; readonly atMs: number; readonly lease: number }
  /**
   * `release` while the lease is live: handed back unprocessed, Ready again with the attempt not
   * counted (as C2 for push). A broker does this with a lease it took for a receive that was
   * answered without it (a queue of a spread store leasing after another one answered).
   */
  | { readonly type: 'released'; readonly atMs: number; readonly lease: number };

/** The name of a simple event. */
export type SimpleEventType = SimpleEvent['type'];

/** The group settings a simple transition decides with. */
export interface SimpleLifecycleContext {
  readonly maxRetries: number;
  /**
   * X2: an expired lease whose message was first delivered more than this ago sends it to the DLQ
   * instead of making it Ready (its next delivery could come at once). @default undefined (no budget)
   */
  readonly maxRetryDurationMs?: number;
}

/** The result of {@link simpleTransition}. */
export type SimpleTransition = Transition<SimpleState, SimpleEventType>;

/** Every state a simple-consumed message can be in, in lifecycle order. */
export const SIMPLE_STATES: readonly SimpleStateName[] = ['ready', 'inflight', 'commit', 'dlq'];

/** Commit and DLQ end the lifecycle: no event leaves them. */
export const SIMPLE_TERMINAL_STATES: readonly SimpleStateName[] = ['commit', 'dlq'];

/** Every move {@link simpleTransition} can make; docs/protocol/state-machines.md draws exactly these. */
export const SIMPLE_TRANSITIONS: readonly TransitionEdge<SimpleStateName, SimpleEventType>[] = [
  { from: 'ready', event: 'delivered', to: 'inflight' },
  { from: 'inflight', event: 'succeeded', to: 'commit' },
  { from: 'inflight', event: 'invisibilityChanged', to: 'inflight' },
  { from: 'inflight', event: 'deadLettered', to: 'dlq' },
  { from: 'inflight', event: 'leaseExpired', to: 'ready' },
  { from: 'inflight', event: 'leaseExpired', to: 'dlq' },
  { from: 'inflight', event: 'released', to: 'ready' },
  { from: 'inflight', event: 'released', to: 'dlq' },
];

/** The reason recorded when a simple consumer's lease runs out. */
export const LEASE_EXPIRED_REASON = 'invisible duration expired without ack';

/** The state of a message that has just been stored: Ready, never delivered. */
export function initialSimpleState(): SimpleState {
  return initialReadyState();
}

/**
 * Apply one event to a simple-consumed message. An ack or a change of invisibility with a stale
 * or expired lease is rejected (S3, S4). When the lease of delivery `maxRetries + 1` expires, the
 * next delivery would exceed the limit, so the message moves to the DLQ at once (S5) rather than
 * sitting in Ready until somebody receives.
 */
export function simpleTransition(
  current: SimpleState,
  event: SimpleEvent,
  context: SimpleLifecycleContext,
): SimpleTransition {
  return withEffects(current, nextSimpleState(current, event, context), event.type);
}

function nextSimpleState(
  current: SimpleState,
  event: SimpleEvent,
  context: SimpleLifecycleContext,
): Step<SimpleState, SimpleEventType> {
  switch (event.type) {
    case 'delivered':
      return startLease(current, event, event.invisibleDurationMs, 'invisibleDurationMs');
    case 'succeeded':
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      return commitLease(current, event);
    case 'invisibilityChanged': {
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      const leaseProblem = checkLease(current, event, true);
      if (leaseProblem) return leaseProblem;
      if (!isDurationMs(event.invisibleDurationMs)) {
        return reject(
          'invalidEvent',
          current.state,
          event.type,
          'invisibleDurationMs must be a whole number >= 0',
        );
      }
      return {
        ok: true,
        state: withCounters(
          {
            state: 'inflight',
            leaseDeadlineMs: event.atMs + event.invisibleDurationMs,
            deliveryAttempt: current.deliveryAttempt,
          },
          current,
          { lease: current.lease + 1 },
        ),
      };
    }
    case 'deadLettered':
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      return deadLetterLease(current, event, true);
    case 'leaseExpired': {
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      const leaseProblem = checkLease(current, event, false);
      if (leaseProblem) return leaseProblem;
      if (event.atMs < current.leaseDeadlineMs) {
        return reject('notDue', current.state, event.type, `the lease runs until ${current.leaseDeadlineMs}`);
      }
      return afterExpiry(current, event.atMs, context);
    }
    case 'released': {
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      const leaseProblem = checkLease(current, event, false);
      if (leaseProblem) return leaseProblem;
      // At or past the deadline the lease has expired already: a release must not undo that
      // attempt's count, or a consumer could dodge maxRetries (S5) by releasing late.
      if (event.atMs >= current.leaseDeadlineMs) return afterExpiry(current, event.atMs, context);
      // C2's rule for simple leases: a release is not a failure; only `releases` moves.
      return {
        ok: true,
        state: withCounters({ state: 'ready' }, current, { releases: current.releases + 1 }),
      };
    }
    default:
      return assertNever(event, 'simple event');
  }
}

/**
 * A lease that ran out unacked (S2): Ready again with the failure counted, or the DLQ when it was
 * the last attempt (S5) or past the retry budget (X2).
 */
function afterExpiry(
  current: Extract<SimpleState, { readonly state: 'inflight' }>,
  atMs: number,
  context: SimpleLifecycleContext,
): Step<SimpleState, SimpleEventType> {
  if (current.failures + 1 > context.maxRetries) {
    return { ok: true, state: deadLettered(current, atMs, LEASE_EXPIRED_REASON, 'maxRetries') };
  }
  // X2: Ready again means the next delivery may come at once; past the budget, the DLQ.
  if (retryBudgetSpent(current.firstDeliveredAtMs, atMs, context.maxRetryDurationMs)) {
    return { ok: true, state: deadLettered(current, atMs, LEASE_EXPIRED_REASON, 'retryBudget') };
  }
  const changes = failureCounted(current, atMs, LEASE_EXPIRED_REASON);
  return { ok: true, state: withCounters({ state: 'ready' }, current, changes) };
}
