import { type Rejection, reject } from './transition.js';

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
