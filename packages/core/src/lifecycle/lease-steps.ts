import type { DeadLetterCause } from './dead-letter-cause.js';
import {
  type DeliveryCounters,
  illegalTransition,
  type Rejection,
  reject,
  withCounters,
} from './transition.js';

/**
 * The steps both lifecycles (push and simple) take the same way: a Ready message is leased, and
 * a live lease is committed. Each machine keeps its own events and states; these only build them.
 */

/** An inflight message, as both lifecycles hold it. */
export type LeasedInflight = {
  readonly state: 'inflight';
  readonly leaseDeadlineMs: number;
  readonly deliveryAttempt: number;
} & DeliveryCounters;

type Refusal<TStateName extends string, TEventType extends string> = {
  readonly ok: false;
  readonly rejection: Rejection<TStateName, TEventType>;
};

interface LeasedState<TStateName extends string> {
  readonly state: TStateName;
  readonly lease: number;
  readonly leaseDeadlineMs: number;
}

/**
 * Check that an event names the live lease of an inflight message: the same lease number and,
 * when `requireLive`, a deadline still in the future. Returns the rejection, or `undefined`.
 */
export function checkLease<TStateName extends string, TEventType extends string>(
  current: LeasedState<TStateName>,
  event: { readonly type: TEventType; readonly lease: number; readonly atMs: number },
  requireLive: boolean,
): { readonly ok: false; readonly rejection: Rejection<TStateName, TEventType> } | undefined {
  if (event.lease !== current.lease) {
    return reject(
      'staleLease',
      current.state,
      event.type,
      `lease ${event.lease} was replaced by lease ${current.lease}`,
    );
  }
  if (requireLive && event.atMs >= current.leaseDeadlineMs) {
    return reject(
      'leaseExpired',
      current.state,
      event.type,
      `lease ${event.lease} expired at ${current.leaseDeadlineMs}, ${event.atMs - current.leaseDeadlineMs} ms before this ${event.type}`,
    );
  }
  return undefined;
}

/** A duration field of an event must be a whole, non-negative number of milliseconds. */
export function isDurationMs(value: number): boolean {
  return Number.isInteger(value) && value >= 0;
}

/**
 * Ready → Inflight: a new lease until `atMs + durationMs`, the attempt shown being `failures + 1`
 * (P6). `durationName` names the event's field in the refusal of a bad duration.
 */
export function startLease<TStateName extends string, TEventType extends string>(
  current: { readonly state: TStateName } & DeliveryCounters,
  event: { readonly type: TEventType; readonly atMs: number },
  durationMs: number,
  durationName: string,
): { readonly ok: true; readonly state: LeasedInflight } | Refusal<TStateName, TEventType> {
  if (current.state !== 'ready') return illegalTransition(current.state, event.type);
  if (!isDurationMs(durationMs) || durationMs === 0) {
    return reject('invalidEvent', current.state, event.type, `${durationName} must be a whole number > 0`);
  }
  return {
    ok: true,
    state: withCounters(
      {
        state: 'inflight',
        leaseDeadlineMs: event.atMs + durationMs,
        deliveryAttempt: current.failures + 1,
      },
      current,
      // X2: the first delivery starts the retry budget; `withCounters` keeps the earliest time.
      { lease: current.lease + 1, firstDeliveredAtMs: event.atMs },
    ),
  };
}

/** Inflight → Commit, for the live lease only (S3): a late or stale success is refused. */
export function commitLease<TEventType extends string>(
  current: LeasedInflight,
  event: { readonly type: TEventType; readonly lease: number; readonly atMs: number },
):
  | { readonly ok: true; readonly state: { readonly state: 'commit' } & DeliveryCounters }
  | Refusal<'inflight', TEventType> {
  return checkLease(current, event, true) ?? { ok: true, state: withCounters({ state: 'commit' }, current) };
}

/** The reason recorded when the broker's consumption timeout fails a push or broadcast delivery (P2). */
export const CONSUMPTION_TIMEOUT_REASON = 'consumption timeout';

/** The reason recorded when a consumer dead-letters a message without giving one (D3). */
export const DEAD_LETTERED_BY_CONSUMER_REASON = 'dead-lettered by the consumer';

/**
 * Inflight → DLQ at once, whatever attempts remain (D3, RocketMQ's delay level −1). The delivery
 * counts as a failed attempt, so the DLQ copy's `attempts` includes it. `requireLive` as for the
 * machine's other verdicts: a simple consumer's must come before its lease's deadline (S3).
 */
export function deadLetterLease<TEventType extends string>(
  current: LeasedInflight & { readonly lease: number },
  event: {
    readonly type: TEventType;
    readonly lease: number;
    readonly atMs: number;
    readonly reason: string;
    /** `nonRetryable` when a listener threw a non-retryable error (X1). @default 'deadLetterNow' */
    readonly cause?: 'nonRetryable';
  },
  requireLive: boolean,
): { readonly ok: true; readonly state: DeadLetteredState } | Refusal<'inflight', TEventType> {
  const leaseProblem = checkLease(current, event, requireLive);
  if (leaseProblem) return leaseProblem;
  const reason = event.reason === '' ? DEAD_LETTERED_BY_CONSUMER_REASON : event.reason;
  return { ok: true, state: deadLettered(current, event.atMs, reason, event.cause ?? 'deadLetterNow') };
}

/** A DLQ state, with its reason and cause (X6). */
export type DeadLetteredState = {
  readonly state: 'dlq';
  readonly reason: string;
  /** Absent on records stored before causes were recorded. */
  readonly cause?: DeadLetterCause;
} & DeliveryCounters;

/**
 * Inflight → DLQ after a failed delivery at `atMs`: the failure is counted (and is the first one
 * when none came before it), and the cause recorded.
 */
export function deadLettered(
  current: LeasedInflight,
  atMs: number,
  reason: string,
  cause: DeadLetterCause,
): DeadLetteredState {
  return withCounters({ state: 'dlq', reason, cause }, current, failureCounted(current, atMs, reason));
}

/** The counters of a delivery that failed at `atMs` with `reason`. */
export function failureCounted(
  current: DeliveryCounters,
  atMs: number,
  reason: string,
): Partial<DeliveryCounters> {
  return { failures: current.failures + 1, lastFailureReason: reason, firstFailedAtMs: atMs };
}
