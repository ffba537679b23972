import { assertNever } from '../assert-never.js';
import { type Random, systemRandom } from '../random.js';
import { type RetryPolicy, retryDelayMs } from '../retry-policy.js';
import { MAX_RETRY_DELAY_MS } from '../retry-policy-validation.js';
import { retryBudgetSpent } from './dead-letter-cause.js';
import { withEffects } from './effects.js';
import {
  CONSUMPTION_TIMEOUT_REASON,
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
  isPostponeMs,
  POSTPONED_PAST_BUDGET_REASON,
  POSTPONED_TOO_LONG_REASON,
  postponeVerdict,
} from './postpone.js';
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

/**
 * Where a message stands for one push-consuming group (rule P1):
 * Ready → Inflight → Commit | WaitingRetry | DLQ, and WaitingRetry → Ready when its delay ends.
 */
export type PushState =
  | ReadyState
  | ({
      readonly state: 'inflight';
      /** When the consumption timeout fails this delivery (P2). */
      readonly leaseDeadlineMs: number;
      /** 1 on the first delivery; releases do not advance it (P6, C2). */
      readonly deliveryAttempt: number;
    } & DeliveryCounters)
  | ({
      readonly state: 'waitingRetry';
      /** 1 for the first retry: the index into the retry policy. */
      readonly retryNumber: number;
      readonly retryDelayMs: number;
      /** The failure time plus the delay (P3: the delay counts from the failure). */
      readonly retryAtMs: number;
    } & DeliveryCounters)
  | ({ readonly state: 'commit' } & DeliveryCounters)
  | DeadLetteredState;

/** The name of a push state. */
export type PushStateName = PushState['state'];

/** What can happen to a push-consumed message. Every time is epoch ms from the broker's clock. */
export type PushEvent =
  /** The broker hands the message to a consumer, leased for `leaseDurationMs`. */
  | { readonly type: 'delivered'; readonly atMs: number; readonly leaseDurationMs: number }
  /** The listener returned SUCCESS. */
  | { readonly type: 'succeeded'; readonly atMs: number; readonly lease: number }
  /** The listener returned FAILURE or threw; `retryAfterMs` overrides the policy's delay once. */
  | {
      readonly type: 'failed';
      readonly atMs: number;
      readonly lease: number;
      readonly reason: string;
      readonly retryAfterMs?: number;
    }
  /**
   * The listener asked to dead-letter the message now, whatever attempts remain (D3); `cause`
   * `nonRetryable` when it threw a non-retryable error (X1).
   */
  | {
      readonly type: 'deadLettered';
      readonly atMs: number;
      readonly lease: number;
      readonly reason: string;
      readonly cause?: 'nonRetryable';
    }
  /** The lease passed its deadline without a result (P2). */
  | { readonly type: 'timedOut'; readonly atMs: number; readonly lease: number }
  /**
   * The listener cannot take the message now (its downstream is rate-limited): back in
   * `postponeMs`, without a failure counted toward `maxRetries` (X4).
   */
  | { readonly type: 'postponed'; readonly atMs: number; readonly lease: number; readonly postponeMs: number }
  /** The consumer handed the message back unprocessed, e.g. on disconnect (C2). */
  | { readonly type: 'released'; readonly atMs: number; readonly lease: number }
  /** The retry delay has ended. */
  | { readonly type: 'retryDue'; readonly atMs: number };

/** The name of a push event. */
export type PushEventType = PushEvent['type'];

/** The group settings a push transition decides with. */
export interface PushLifecycleContext {
  readonly retryPolicy: RetryPolicy;
  readonly maxRetries: number;
  /**
   * X2: a failed message whose next retry would fall more than this after its first delivery goes
   * to the DLQ instead. @default undefined (no budget)
   */
  readonly maxRetryDurationMs?: number;
  /** X4: how long postponements may go on, from the first, without a budget. @default 3600000 (1 h) */
  readonly maxPostponeMs?: number;
  /** Jitter source for a policy's jitter (X3). @default Math.random */
  readonly random?: Random;
}

/** The result of {@link pushTransition}. */
export type PushTransition = Transition<PushState, PushEventType>;

/** Every state a push-consumed message can be in, in lifecycle order. */
export const PUSH_STATES: readonly PushStateName[] = ['ready', 'inflight', 'waitingRetry', 'commit', 'dlq'];

/** Commit and DLQ end the lifecycle: no event leaves them. */
export const PUSH_TERMINAL_STATES: readonly PushStateName[] = ['commit', 'dlq'];

/** Every move {@link pushTransition} can make; docs/protocol/state-machines.md draws exactly these. */
export const PUSH_TRANSITIONS: readonly TransitionEdge<PushStateName, PushEventType>[] = [
  { from: 'ready', event: 'delivered', to: 'inflight' },
  { from: 'inflight', event: 'succeeded', to: 'commit' },
  { from: 'inflight', event: 'failed', to: 'waitingRetry' },
  { from: 'inflight', event: 'failed', to: 'dlq' },
  { from: 'inflight', event: 'deadLettered', to: 'dlq' },
  { from: 'inflight', event: 'postponed', to: 'waitingRetry' },
  { from: 'inflight', event: 'postponed', to: 'dlq' },
  { from: 'inflight', event: 'timedOut', to: 'waitingRetry' },
  { from: 'inflight', event: 'timedOut', to: 'dlq' },
  { from: 'inflight', event: 'released', to: 'ready' },
  { from: 'inflight', event: 'released', to: 'waitingRetry' },
  { from: 'inflight', event: 'released', to: 'dlq' },
  { from: 'waitingRetry', event: 'retryDue', to: 'ready' },
];

/** The state of a message that has just been stored: Ready, never delivered. */
export function initialPushState(): PushState {
  return initialReadyState();
}

export { CONSUMPTION_TIMEOUT_REASON };

/**
 * Apply one event to a push-consumed message. Decides, from the group's policy and
 * `maxRetries`, whether a failure waits for a retry (P3) or goes to the DLQ at once (P4), and
 * returns the next state with its effects. An event that does not fit the state is returned as
 * a rejection; the state is unchanged.
 */
export function pushTransition(
  current: PushState,
  event: PushEvent,
  context: PushLifecycleContext,
): PushTransition {
  return withEffects(current, nextPushState(current, event, context), event.type);
}

function nextPushState(
  current: PushState,
  event: PushEvent,
  context: PushLifecycleContext,
): Step<PushState, PushEventType> {
  switch (event.type) {
    case 'delivered':
      return startLease(current, event, event.leaseDurationMs, 'leaseDurationMs');
    case 'succeeded':
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      return commitLease(current, event);
    case 'failed': {
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      const leaseProblem = checkLease(current, event, false);
      if (leaseProblem) return leaseProblem;
      if (
        event.retryAfterMs !== undefined &&
        !(isDurationMs(event.retryAfterMs) && event.retryAfterMs <= MAX_RETRY_DELAY_MS)
      ) {
        return reject(
          'invalidEvent',
          current.state,
          event.type,
          `retryAfterMs must be a whole number from 0 to ${MAX_RETRY_DELAY_MS}`,
        );
      }
      return afterFailure(current, event.atMs, event.reason, event.retryAfterMs, context);
    }
    case 'deadLettered':
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      // Like a failure, a late verdict counts as long as the lease was not replaced.
      return deadLetterLease(current, event, false);
    case 'postponed':
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      return afterPostpone(current, event, context);
    case 'timedOut': {
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      const leaseProblem = checkLease(current, event, false);
      if (leaseProblem) return leaseProblem;
      if (event.atMs < current.leaseDeadlineMs) {
        return reject('notDue', current.state, event.type, `the lease runs until ${current.leaseDeadlineMs}`);
      }
      return afterFailure(current, event.atMs, CONSUMPTION_TIMEOUT_REASON, undefined, context, true);
    }
    case 'released': {
      if (current.state !== 'inflight') return illegalTransition(current.state, event.type);
      const leaseProblem = checkLease(current, event, false);
      if (leaseProblem) return leaseProblem;
      // A release at or after the deadline is the timeout the delivery has already become (P2):
      // counting it as a free release would let a hung consumer dodge maxRetries (P4).
      if (event.atMs >= current.leaseDeadlineMs) {
        return afterFailure(current, event.atMs, CONSUMPTION_TIMEOUT_REASON, undefined, context, true);
      }
      // C2: a release is not a failure; only `releases` moves.
      return {
        ok: true,
        state: withCounters({ state: 'ready' }, current, { releases: current.releases + 1 }),
      };
    }
    case 'retryDue': {
      if (current.state !== 'waitingRetry') return illegalTransition(current.state, event.type);
      if (event.atMs < current.retryAtMs) {
        return reject('notDue', current.state, event.type, `the retry is due at ${current.retryAtMs}`);
      }
      return { ok: true, state: withCounters({ state: 'ready' }, current) };
    }
    default:
      return assertNever(event, 'push event');
  }
}

/**
 * P3/P4: the failure of delivery `maxRetries + 1` dead-letters; any earlier one waits, unless its
 * retry would fall past the group's retry budget (X2). `timedOut`: the broker's consumption
 * timeout failed it (P2), which the DLQ's cause says when it spends the last attempt (X6).
 */
function afterFailure(
  current: PushState & { readonly state: 'inflight' },
  atMs: number,
  reason: string,
  retryAfterMs: number | undefined,
  context: PushLifecycleContext,
  timedOut = false,
): Step<PushState, PushEventType> {
  const failures = current.failures + 1;
  if (failures > context.maxRetries) {
    const cause = timedOut ? 'consumptionTimeout' : 'maxRetries';
    return { ok: true, state: deadLettered(current, atMs, reason, cause) };
  }
  const delayMs = retryAfterMs ?? retryDelayMs(context.retryPolicy, failures, context.random ?? systemRandom);
  if (retryBudgetSpent(current.firstDeliveredAtMs, atMs + delayMs, context.maxRetryDurationMs)) {
    return { ok: true, state: deadLettered(current, atMs, reason, 'retryBudget') };
  }
  const changes = failureCounted(current, atMs, reason);
  return {
    ok: true,
    state: withCounters(
      { state: 'waitingRetry', retryNumber: failures, retryDelayMs: delayMs, retryAtMs: atMs + delayMs },
      current,
      changes,
    ),
  };
}

/**
 * X4: Inflight → WaitingRetry for `postponeMs`, without a failure: the next delivery shows the
 * same attempt (P6). Bounded: past the retry budget it dead-letters (X2), and without one, past
 * `maxPostponeMs` from the first postponement, it is a failure like any other.
 */
function afterPostpone(
  current: PushState & { readonly state: 'inflight' },
  event: Extract<PushEvent, { readonly type: 'postponed' }>,
  context: PushLifecycleContext,
): Step<PushState, PushEventType> {
  const leaseProblem = checkLease(current, event, false);
  if (leaseProblem) return leaseProblem;
  if (!isPostponeMs(event.postponeMs, MAX_RETRY_DELAY_MS)) {
    return reject(
      'invalidEvent',
      current.state,
      event.type,
      `postponeMs must be a whole number from 0 to ${MAX_RETRY_DELAY_MS}`,
    );
  }
  const { atMs, postponeMs } = event;
  switch (
    postponeVerdict(atMs, postponeMs, current.firstPostponedAtMs, current.firstDeliveredAtMs, context)
  ) {
    case 'budget':
      return { ok: true, state: deadLettered(current, atMs, POSTPONED_PAST_BUDGET_REASON, 'retryBudget') };
    case 'fail':
      return afterFailure(current, atMs, POSTPONED_TOO_LONG_REASON, undefined, context);
    case 'wait':
      return {
        ok: true,
        state: withCounters(
          // `retryNumber` stays the failures' count: a postponement is no retry of the policy.
          {
            state: 'waitingRetry',
            retryNumber: current.failures,
            retryDelayMs: postponeMs,
            retryAtMs: atMs + postponeMs,
          },
          current,
          { firstPostponedAtMs: atMs },
        ),
      };
  }
}
