import type { DeadLetterCause } from './dead-letter-cause.js';
import type { DeliveryCounters, Step, Transition } from './transition.js';

/**
 * What a lifecycle transition implies beyond the next state. Core decides them; the broker's
 * effect applier carries them out (writes the schedule, the lease table, the ready queue, the DLQ,
 * the history and the group counters) and decides nothing itself.
 */
export type DeliveryEffect =
  /** Hold the new lease until `deadlineMs`: the push consumption timeout (P2), the simple invisibility (S2). */
  | { readonly type: 'startLeaseTimer'; readonly lease: number; readonly deadlineMs: number }
  /** The lease ended before its timer fired (settled, released, replaced): the timer goes. */
  | { readonly type: 'cancelLeaseTimer' }
  /** WaitingRetry until `atMs` (P3). */
  | { readonly type: 'scheduleRetry'; readonly atMs: number }
  /** Ready again: the message joins the group's ready queue for the next consumer. */
  | { readonly type: 'requeue' }
  /** How the delivery of `lease` ended, for the message's history. */
  | {
      readonly type: 'recordOutcome';
      readonly outcome: DeliveryOutcome;
      readonly lease: number;
      readonly deliveryAttempt: number;
      readonly reason?: string;
      /** The delivery that moved the message to the DLQ: why, as its DLQ entry says it (X6). */
      readonly cause?: DeadLetterCause;
    }
  /** Copy the message to the group's DLQ (D1). */
  | {
      readonly type: 'deadLetter';
      /** Deliveries that counted toward `maxRetries`. */
      readonly attempts: number;
      readonly reason: string;
      /** Why, machine-readable (X6). */
      readonly cause: DeadLetterCause;
      /** When its first failure happened (epoch ms), when known (X6). */
      readonly firstFailedAtMs?: number;
      /** The last lease number used, so a redriven message's leases never repeat one (D2). */
      readonly lastLease: number;
    }
  /** The message is done for the group (Commit, DLQ, Consumed): its FIFO message group moves on (P5). */
  | { readonly type: 'releaseFifoKey' }
  /** A group counter moves; every counter a state implies is moved only by these. */
  | { readonly type: 'adjustCounter'; readonly counter: GroupCounter; readonly by: 1 | -1 };

/** The name of a delivery effect. */
export type DeliveryEffectType = DeliveryEffect['type'];

/** How one delivery ended, as the message's history records it. */
export type DeliveryOutcome =
  | 'committed'
  | 'failed'
  | 'timedOut'
  | 'leaseExpired'
  | 'released'
  | 'deadLettered'
  /** The listener could not take it now and postponed it, without a failure (X4). */
  | 'postponed';

/**
 * The counters a group keeps of its messages' states: `inflight` and `waitingRetry` count the
 * messages in that state now; `committed` and `deadLettered` count arrivals in a terminal state.
 */
export type GroupCounter = 'inflight' | 'waitingRetry' | 'committed' | 'deadLettered';

/** Events a timer produces: the timer that would be cancelled is the one that fired. */
const TIMER_EVENTS: ReadonlySet<string> = new Set(['timedOut', 'leaseExpired', 'retryDue']);

/** The state names every lifecycle shares (broadcast's `consumed` ends like a commit). */
type LifecycleStateName = 'ready' | 'inflight' | 'waitingRetry' | 'commit' | 'dlq' | 'consumed';

type AnyLifecycleState = { readonly state: LifecycleStateName } & DeliveryCounters & {
    readonly leaseDeadlineMs?: number;
    readonly deliveryAttempt?: number;
    readonly retryAtMs?: number;
    readonly reason?: string;
    readonly cause?: DeadLetterCause;
    readonly outcome?: string;
  };

/**
 * The effects of moving from `from` to `to` on `eventType`, for every lifecycle. One function, so
 * the push, simple and broadcast machines cannot disagree on what a state change means:
 *
 * - leaving Inflight ends the lease: its timer is cancelled (unless the timer is what fired) and
 *   the delivery's outcome is recorded; a new lease (delivery, change of invisibility) starts one;
 * - entering WaitingRetry schedules the retry; entering Ready queues the message;
 * - entering DLQ copies the message there; entering a terminal state moves the FIFO key on;
 * - every state change moves the group counters of the states left and entered.
 */
export function effectsOf(
  from: AnyLifecycleState,
  to: AnyLifecycleState,
  eventType: string,
): DeliveryEffect[] {
  const effects: DeliveryEffect[] = [];
  const leaseEnded = from.state === 'inflight' && (to.state !== 'inflight' || to.lease !== from.lease);
  if (leaseEnded && !TIMER_EVENTS.has(eventType)) effects.push(CANCEL_LEASE_TIMER);
  if (from.state === 'inflight' && to.state !== 'inflight') {
    // X4: a postponement past its bound is a failure, recorded as one.
    const event = eventType === 'postponed' && to.failures > from.failures ? 'failed' : eventType;
    const reason = outcomeReasonOf(to, event);
    const outcome = outcomeOf(to, event);
    const lease = from.lease;
    const deliveryAttempt = from.deliveryAttempt ?? 1;
    if (to.state === 'dlq') {
      // X6: the history keeps the DLQ entry's cause with the delivery that ended there, so the
      // message view says why, as the listing does.
      const cause = to.cause ?? 'maxRetries';
      effects.push({
        type: 'recordOutcome',
        outcome,
        lease,
        deliveryAttempt,
        ...(reason === undefined ? {} : { reason }),
        cause,
      });
    } else {
      effects.push(
        reason === undefined
          ? { type: 'recordOutcome', outcome, lease, deliveryAttempt }
          : { type: 'recordOutcome', outcome, lease, deliveryAttempt, reason },
      );
    }
  }
  if (to.state === 'inflight' && to.lease !== from.lease) {
    effects.push({ type: 'startLeaseTimer', lease: to.lease, deadlineMs: to.leaseDeadlineMs ?? 0 });
  }
  if (to.state === 'waitingRetry' && from.state !== 'waitingRetry') {
    effects.push({ type: 'scheduleRetry', atMs: to.retryAtMs ?? 0 });
  }
  if (to.state === 'ready' && from.state !== 'ready') effects.push(REQUEUE);
  if (to.state === 'dlq') {
    const effect = {
      type: 'deadLetter',
      attempts: to.failures,
      reason: to.reason ?? '',
      cause: to.cause ?? 'maxRetries',
      lastLease: to.lease,
    } as const;
    effects.push(
      to.firstFailedAtMs === undefined ? effect : { ...effect, firstFailedAtMs: to.firstFailedAtMs },
    );
  }
  if (isTerminal(to.state) && !isTerminal(from.state)) effects.push(RELEASE_FIFO_KEY);
  if (from.state !== to.state) {
    const left = counterOf(from.state, 'left');
    const entered = counterOf(to.state, 'entered', to.outcome);
    if (left) effects.push(COUNTER_DOWN[left]);
    if (entered) effects.push(COUNTER_UP[entered]);
  }
  return effects;
}

// The effects that carry no data of their own are shared, frozen values: every delivery and every
// settle makes a few of them, and they need not be allocated each time.
const CANCEL_LEASE_TIMER: DeliveryEffect = Object.freeze({ type: 'cancelLeaseTimer' });
const REQUEUE: DeliveryEffect = Object.freeze({ type: 'requeue' });
const RELEASE_FIFO_KEY: DeliveryEffect = Object.freeze({ type: 'releaseFifoKey' });
const GROUP_COUNTERS: readonly GroupCounter[] = ['inflight', 'waitingRetry', 'committed', 'deadLettered'];
const counterEffects = (by: 1 | -1) =>
  Object.fromEntries(
    GROUP_COUNTERS.map((counter) => [counter, Object.freeze({ type: 'adjustCounter', counter, by })]),
  ) as Record<GroupCounter, DeliveryEffect>;
const COUNTER_UP = counterEffects(1);
const COUNTER_DOWN = counterEffects(-1);

/** The counter a state moves when a message enters or leaves it, if any. */
function counterOf(
  state: LifecycleStateName,
  direction: 'entered' | 'left',
  outcome?: string,
): GroupCounter | undefined {
  switch (state) {
    case 'inflight':
      return 'inflight';
    case 'waitingRetry':
      return 'waitingRetry';
    // Terminal states are counted on arrival only: nothing leaves them.
    case 'commit':
      return direction === 'entered' ? 'committed' : undefined;
    case 'dlq':
      return direction === 'entered' ? 'deadLettered' : undefined;
    // A broadcast instance's successful consumption counts as the group's commit (B1).
    case 'consumed':
      return direction === 'entered' && outcome === 'succeeded' ? 'committed' : undefined;
    default:
      return undefined;
  }
}

function isTerminal(state: LifecycleStateName): boolean {
  return state === 'commit' || state === 'dlq' || state === 'consumed';
}

/** Why the delivery ended, when it did not succeed and was not handed back. */
function outcomeReasonOf(to: AnyLifecycleState, eventType: string): string | undefined {
  switch (to.state) {
    case 'dlq':
    case 'consumed':
      return to.reason;
    case 'waitingRetry':
      // A postponement is no failure: the last failure's reason is not its own (X4).
      return eventType === 'postponed' ? undefined : to.lastFailureReason;
    case 'ready':
      // A release is no failure; an expired simple lease is (S2).
      return eventType === 'leaseExpired' ? to.lastFailureReason : undefined;
    default:
      return undefined;
  }
}

/** The history's name for how a delivery ended: by where it went, then by what ended it. */
function outcomeOf(to: AnyLifecycleState, eventType: string): DeliveryOutcome {
  if (to.state === 'commit') return 'committed';
  if (to.state === 'dlq') return 'deadLettered';
  if (to.state === 'consumed') {
    if (to.outcome === 'succeeded') return 'committed';
    return to.outcome === 'timedOut' ? 'timedOut' : 'failed';
  }
  switch (eventType) {
    case 'failed':
      return 'failed';
    case 'postponed':
      return 'postponed';
    case 'leaseExpired':
      return 'leaseExpired';
    case 'released':
      // A release that arrived after the deadline is the timeout it had become (P2).
      return to.state === 'ready' ? 'released' : 'timedOut';
    default:
      return 'timedOut';
  }
}

/**
 * A machine's step, completed with its effects: the one way every lifecycle turns its next state
 * into a {@link Transition}.
 */
export function withEffects<TState extends AnyLifecycleState, TEventType extends string>(
  current: TState,
  step: Step<TState, TEventType>,
  eventType: TEventType,
): Transition<TState, TEventType> {
  if (!step.ok) return step;
  return { ok: true, state: step.state, effects: effectsOf(current, step.state, eventType) };
}
