import {
  assertNever,
  type DeadLetterCause,
  type DeliveryCounters,
  type PushState,
  type SimpleState,
} from '@ricochet/core';
import type { FieldTable } from './field-table.js';

/** What every stored delivery state counts, whatever its state (layout 1). */
interface StoredCountersV1 {
  readonly failures: number;
  readonly releases: number;
  readonly lease: number;
  readonly lastFailureReason?: string;
  /** X2. Absent from records stored before it existed, and before the first delivery. */
  readonly firstDeliveredAtMs?: number;
  /** X6. Absent from records stored before it existed, and before the first failure. */
  readonly firstFailedAtMs?: number;
  /** X4. Absent from records stored before it existed, and from those never postponed. */
  readonly firstPostponedAtMs?: number;
}

/** A push-consumed message's lifecycle state as layout 1 stores it. */
export type StoredPushStateV1 =
  | ({ readonly state: 'ready' } & StoredCountersV1)
  | ({
      readonly state: 'inflight';
      readonly leaseDeadlineMs: number;
      readonly deliveryAttempt: number;
    } & StoredCountersV1)
  | ({
      readonly state: 'waitingRetry';
      readonly retryNumber: number;
      readonly retryDelayMs: number;
      readonly retryAtMs: number;
    } & StoredCountersV1)
  | ({ readonly state: 'commit' } & StoredCountersV1)
  | ({
      readonly state: 'dlq';
      readonly reason: string;
      /** X6. Absent from records stored before it existed. */
      readonly cause?: DeadLetterCause;
    } & StoredCountersV1);

/** A simple-consumed message's lifecycle state as layout 1 stores it: the push states but WaitingRetry. */
export type StoredSimpleStateV1 = Exclude<StoredPushStateV1, { readonly state: 'waitingRetry' }>;

const COUNTER_FIELDS = {
  failures: true,
  releases: true,
  lease: true,
  lastFailureReason: true,
  firstDeliveredAtMs: true,
  firstFailedAtMs: true,
  firstPostponedAtMs: true,
} as const;

/**
 * The fields of core's states that the mappers below copy. This compiles only while core's states
 * have exactly these variants and fields; when core changes them, map the change here (and, if the
 * stored shape must change too, bump the layout version with a migration, see lmdb-store.ts).
 */
export const MAPPED_STATE_FIELDS = {
  push: {
    ready: { state: true, ...COUNTER_FIELDS },
    inflight: { state: true, leaseDeadlineMs: true, deliveryAttempt: true, ...COUNTER_FIELDS },
    waitingRetry: { state: true, retryNumber: true, retryDelayMs: true, retryAtMs: true, ...COUNTER_FIELDS },
    commit: { state: true, ...COUNTER_FIELDS },
    dlq: { state: true, reason: true, cause: true, ...COUNTER_FIELDS },
  },
  simple: {
    ready: { state: true, ...COUNTER_FIELDS },
    inflight: { state: true, leaseDeadlineMs: true, deliveryAttempt: true, ...COUNTER_FIELDS },
    commit: { state: true, ...COUNTER_FIELDS },
    dlq: { state: true, reason: true, cause: true, ...COUNTER_FIELDS },
  },
} as const satisfies {
  readonly push: FieldTable<PushState, 'state'>;
  readonly simple: FieldTable<SimpleState, 'state'>;
};

type WaitingRetry<TUnion> = Extract<TUnion, { readonly state: 'waitingRetry' }>;

/**
 * Core's push state as layout 1 stores it. Each state's own fields come first, then the counters:
 * the order core's transitions write them in, which the bytes on disk depend on.
 */
export function toStoredPushState(state: PushState): StoredPushStateV1 {
  if (state.state !== 'waitingRetry') return toStoredSimpleState(state);
  const { retryNumber, retryDelayMs, retryAtMs } = state;
  return withStoredCounters({ state: 'waitingRetry', retryNumber, retryDelayMs, retryAtMs }, state);
}

/** Core's simple state (or a push state but WaitingRetry) as layout 1 stores it. */
export function toStoredSimpleState(
  state: SimpleState | Exclude<PushState, WaitingRetry<PushState>>,
): StoredSimpleStateV1 {
  switch (state.state) {
    case 'ready':
      return withStoredCounters({ state: 'ready' }, state);
    case 'inflight': {
      const { leaseDeadlineMs, deliveryAttempt } = state;
      return withStoredCounters({ state: 'inflight', leaseDeadlineMs, deliveryAttempt }, state);
    }
    case 'commit':
      return withStoredCounters({ state: 'commit' }, state);
    case 'dlq':
      return withStoredCounters(
        state.cause === undefined
          ? { state: 'dlq', reason: state.reason }
          : { state: 'dlq', reason: state.reason, cause: state.cause },
        state,
      );
    default:
      return assertNever(state, 'delivery state');
  }
}

/** A stored push state as core's push state. */
export function fromStoredPushState(stored: StoredPushStateV1): PushState {
  if (stored.state !== 'waitingRetry') return fromStoredSimpleState(stored);
  const { retryNumber, retryDelayMs, retryAtMs } = stored;
  return withCoreCounters({ state: 'waitingRetry', retryNumber, retryDelayMs, retryAtMs }, stored);
}

/** A stored simple state as core's simple state; every one of them is a push state too. */
export function fromStoredSimpleState(stored: StoredSimpleStateV1): SimpleState & PushState {
  switch (stored.state) {
    case 'ready':
      return withCoreCounters({ state: 'ready' }, stored);
    case 'inflight': {
      const { leaseDeadlineMs, deliveryAttempt } = stored;
      return withCoreCounters({ state: 'inflight', leaseDeadlineMs, deliveryAttempt }, stored);
    }
    case 'commit':
      return withCoreCounters({ state: 'commit' }, stored);
    case 'dlq':
      return withCoreCounters(
        stored.cause === undefined
          ? { state: 'dlq', reason: stored.reason }
          : { state: 'dlq', reason: stored.reason, cause: stored.cause },
        stored,
      );
    default:
      return assertNever(stored, 'stored delivery state');
  }
}

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/** `fields` with core's counters appended: assigned in place, as a state is built once per write. */
function withStoredCounters<TFields extends object>(
  fields: TFields,
  counters: DeliveryCounters,
): TFields & StoredCountersV1 {
  const stored = fields as TFields & Writable<StoredCountersV1>;
  stored.failures = counters.failures;
  stored.releases = counters.releases;
  stored.lease = counters.lease;
  if (counters.lastFailureReason !== undefined) stored.lastFailureReason = counters.lastFailureReason;
  // Written only when known, so a record without them is stored byte for byte as before.
  if (counters.firstDeliveredAtMs !== undefined) stored.firstDeliveredAtMs = counters.firstDeliveredAtMs;
  if (counters.firstFailedAtMs !== undefined) stored.firstFailedAtMs = counters.firstFailedAtMs;
  if (counters.firstPostponedAtMs !== undefined) stored.firstPostponedAtMs = counters.firstPostponedAtMs;
  return stored;
}

/** `fields` with the stored counters appended as core's. */
function withCoreCounters<TFields extends object>(
  fields: TFields,
  counters: StoredCountersV1,
): TFields & DeliveryCounters {
  const state = fields as TFields & Writable<DeliveryCounters>;
  state.failures = counters.failures;
  state.releases = counters.releases;
  state.lease = counters.lease;
  if (counters.lastFailureReason !== undefined) state.lastFailureReason = counters.lastFailureReason;
  if (counters.firstDeliveredAtMs !== undefined) state.firstDeliveredAtMs = counters.firstDeliveredAtMs;
  if (counters.firstFailedAtMs !== undefined) state.firstFailedAtMs = counters.firstFailedAtMs;
  if (counters.firstPostponedAtMs !== undefined) state.firstPostponedAtMs = counters.firstPostponedAtMs;
  return state;
}
