import type { DeliveryEffect } from './effects.js';

/** Why a lifecycle refused an event. */
export type RejectionReason =
  /** The event has no meaning in the current state (e.g. an ack for a committed message). */
  | 'illegalTransition'
  /** The event names an earlier lease than the current one: a stale receipt handle. */
  | 'staleLease'
  /** The lease the event names has passed its deadline. */
  | 'leaseExpired'
  /** A timer event arrived before its time. */
  | 'notDue'
  /** The event's own fields are out of range. */
  | 'invalidEvent';

/** A refused event: the state stays as it was. */
export interface Rejection<TStateName extends string, TEventType extends string> {
  readonly reason: RejectionReason;
  readonly from: TStateName;
  readonly event: TEventType;
  readonly message: string;
}

/**
 * The result of applying an event to a lifecycle state: the next state and the effects it implies
 * (see {@link DeliveryEffect}), which the broker carries out in order. An illegal event is a value,
 * never a throw: the broker turns it into an error frame (`INVALID_RECEIPT_HANDLE`, …) for the client.
 */
export type Transition<TState extends { readonly state: string }, TEventType extends string> =
  | { readonly ok: true; readonly state: TState; readonly effects: readonly DeliveryEffect[] }
  | { readonly ok: false; readonly rejection: Rejection<TState['state'], TEventType> };

/** A machine's next state before core derives its effects. */
export type Step<TState extends { readonly state: string }, TEventType extends string> =
  | { readonly ok: true; readonly state: TState }
  | { readonly ok: false; readonly rejection: Rejection<TState['state'], TEventType> };

/**
 * The state every lifecycle starts from and returns to: Ready, with its counters. Push, simple and
 * broadcast machines share it, so a Ready record may be taken on by whichever machine delivers it.
 */
export type ReadyState = { readonly state: 'ready' } & DeliveryCounters;

/** The state of a message that has just been stored: Ready, never delivered. */
export function initialReadyState(): ReadyState {
  return { state: 'ready', failures: 0, releases: 0, lease: 0 };
}

/**
 * D2: a message redriven from the DLQ starts its lifecycle over — Ready, no failures, so it gets
 * every attempt again — but its lease numbers continue after `lastLease`, so the history entries
 * of its new deliveries never repeat an old one's.
 */
export function redrivenState(lastLease: number): ReadyState {
  return { state: 'ready', failures: 0, releases: 0, lease: lastLease };
}

/** One edge of a lifecycle diagram: the event `event` may move a message from `from` to `to`. */
export interface TransitionEdge<TStateName extends string, TEventType extends string> {
  readonly from: TStateName;
  readonly event: TEventType;
  readonly to: TStateName;
}

/** Counters every lifecycle keeps, whatever its state. */
export interface DeliveryCounters {
  /**
   * Deliveries that ended in a failure or a timeout: they count toward `maxRetries`. The
   * delivery attempt shown to a consumer is `failures + 1` (rule P6).
   */
  readonly failures: number;
  /** Deliveries handed back unprocessed (C2); they never count toward `maxRetries`. */
  readonly releases: number;
  /**
   * The sequence number of the latest lease (0 before the first delivery). Every delivery and
   * every change of invisibility takes a new one; a receipt handle names the lease it holds, so
   * an old handle is recognised as stale.
   */
  readonly lease: number;
  /** Why the last failed delivery failed, for the DLQ record and the delivery history. */
  readonly lastFailureReason?: string;
  /**
   * When the message was first delivered to the group (epoch ms); X2's retry budget counts from
   * it. Absent before the first delivery, and on records stored before the field existed.
   */
  readonly firstDeliveredAtMs?: number;
  /** When its first failed delivery failed (epoch ms), for the DLQ's failure record (X6). */
  readonly firstFailedAtMs?: number;
  /** When a listener first postponed it (epoch ms); X4's `maxPostponeMs` counts from it. */
  readonly firstPostponedAtMs?: number;
}

export function reject<TStateName extends string, TEventType extends string>(
  reason: RejectionReason,
  from: TStateName,
  event: TEventType,
  message: string,
): { readonly ok: false; readonly rejection: Rejection<TStateName, TEventType> } {
  return { ok: false, rejection: { reason, from, event, message } };
}

/** The refusal of an event that has no meaning in the current state. */
export function illegalTransition<TStateName extends string, TEventType extends string>(
  from: TStateName,
  event: TEventType,
): { readonly ok: false; readonly rejection: Rejection<TStateName, TEventType> } {
  return reject('illegalTransition', from, event, `${event} is not allowed in ${from}`);
}

/**
 * The next state: `fields` with the counters of `current` carried over, and `changes` applied.
 * Written by assignment into the fresh `fields` object rather than with spreads: a transition
 * runs for every delivery and every result, and the intermediate copies showed in profiles.
 */
export function withCounters<TFields extends { readonly state: string }>(
  fields: TFields,
  current: DeliveryCounters,
  changes: Partial<DeliveryCounters> = NO_CHANGES,
): TFields & DeliveryCounters {
  const next = fields as TFields & { -readonly [K in keyof DeliveryCounters]: DeliveryCounters[K] };
  next.failures = changes.failures ?? current.failures;
  next.releases = changes.releases ?? current.releases;
  next.lease = changes.lease ?? current.lease;
  const lastFailureReason = changes.lastFailureReason ?? current.lastFailureReason;
  if (lastFailureReason !== undefined) next.lastFailureReason = lastFailureReason;
  const firstDeliveredAtMs = current.firstDeliveredAtMs ?? changes.firstDeliveredAtMs;
  if (firstDeliveredAtMs !== undefined) next.firstDeliveredAtMs = firstDeliveredAtMs;
  const firstFailedAtMs = current.firstFailedAtMs ?? changes.firstFailedAtMs;
  if (firstFailedAtMs !== undefined) next.firstFailedAtMs = firstFailedAtMs;
  const firstPostponedAtMs = current.firstPostponedAtMs ?? changes.firstPostponedAtMs;
  if (firstPostponedAtMs !== undefined) next.firstPostponedAtMs = firstPostponedAtMs;
  return next;
}

const NO_CHANGES: Partial<DeliveryCounters> = Object.freeze({});
