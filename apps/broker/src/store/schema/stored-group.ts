import {
  assertNever,
  DEFAULT_BROADCAST_INSTANCE_TTL_MS,
  DEFAULT_DLQ_RETENTION_MS,
  type GroupConfig,
  type PauseOnFailuresConfig,
  type RetryPolicy,
  type StoredGroupPause,
} from '@ricochet/core';
import type { GroupRecord } from '../records.js';
import type { AllFields, FieldTable } from './field-table.js';

/** A retry policy as layout 1 stores it: the JSON shape of DESIGN.md §2. */
export type StoredRetryPolicyV1 =
  // `jitter` (X3) is absent from policies stored before it existed and from those without one.
  | { readonly type: 'stepped'; readonly delaysMs: readonly number[]; readonly jitter?: number }
  | { readonly type: 'fixed'; readonly delayMs: number; readonly jitter?: number }
  | {
      readonly type: 'exponential';
      readonly initialMs: number;
      readonly multiplier: number;
      readonly maxMs: number;
      readonly jitter: number;
    };

/** A group's config as layout 1 stores it. */
export interface StoredGroupConfigV1 {
  readonly maxRetries: number;
  readonly retryPolicy: StoredRetryPolicyV1;
  /** X2's retry budget. Absent from groups stored before it existed and from groups without one. */
  readonly maxRetryDurationMs?: number;
  /** X4. Absent from groups stored before it existed and from groups that keep the default. */
  readonly maxPostponeMs?: number;
  readonly fifo: boolean;
  readonly consumeMode: 'clustering' | 'broadcasting';
  readonly consumptionTimeoutMs: number;
  readonly startFrom: 'latest' | 'earliest';
  /** Absent from groups stored before broadcasting groups (B1) existed: they take the default. */
  readonly broadcastInstanceTtlMs?: number;
  /**
   * Absent from groups stored before retention existed, and written only when it differs from the
   * default, so a group with the default is stored byte for byte as before: absent means the default.
   */
  readonly dlqRetentionMs?: number;
  /**
   * The failure-storm rule (DESIGN.md §11). Absent from groups stored before it existed and from
   * groups without it: absent means off.
   */
  readonly pauseOnFailures?: PauseOnFailuresConfig;
  /**
   * Which ended deliveries the group's history keeps. Absent from groups stored before the choice
   * existed and from groups that leave it to the broker's `--delivery-history`.
   */
  readonly history?: 'failures' | 'full';
  /** X5's delivery rate. Absent from groups stored before it existed and from groups without a limit. */
  readonly maxDeliveriesPerSecond?: number;
}

/** A group's breaker state as layout 1 stores it (DESIGN.md §11). */
export type StoredBreakerV1 =
  | { readonly state: 'closed' }
  | { readonly state: 'open'; readonly pauseMs: number; readonly nextProbeAtMs: number }
  | {
      readonly state: 'halfOpen';
      readonly pauseMs: number;
      readonly probeId: string;
      readonly probeSentAtMs: number;
    };

/** A group's pause state as layout 1 stores it: its breaker and an operator's manual pause. */
export interface StoredGroupPauseV1 {
  readonly breaker: StoredBreakerV1;
  readonly manuallyPaused: boolean;
}

/** A value of the `groups` database in layout 1. */
export interface StoredGroupV1 {
  readonly name: string;
  readonly config: StoredGroupConfigV1;
  readonly createdAt: number;
  /**
   * Absent from groups stored before failure storms existed, and written only while the group is
   * paused (by hand or by its breaker), so a group that never paused is stored byte for byte as before.
   */
  readonly pause?: StoredGroupPauseV1;
}

/** The fields of core's group config and retry policies the mappers below copy; compiles only while that is all of them. */
export const MAPPED_GROUP_FIELDS = {
  record: { name: true, config: true, createdAt: true, pause: true },
  config: {
    maxRetries: true,
    retryPolicy: true,
    maxRetryDurationMs: true,
    maxPostponeMs: true,
    fifo: true,
    consumeMode: true,
    consumptionTimeoutMs: true,
    startFrom: true,
    broadcastInstanceTtlMs: true,
    dlqRetentionMs: true,
    pauseOnFailures: true,
    history: true,
    maxDeliveriesPerSecond: true,
  },
  retryPolicy: {
    stepped: { type: true, delaysMs: true, jitter: true },
    fixed: { type: true, delayMs: true, jitter: true },
    exponential: { type: true, initialMs: true, multiplier: true, maxMs: true, jitter: true },
  },
} as const satisfies {
  readonly record: AllFields<GroupRecord>;
  readonly config: AllFields<GroupConfig>;
  readonly retryPolicy: FieldTable<RetryPolicy, 'type'>;
};

/** The engine's group record as layout 1 stores it, fields in the order the broker has always written them. */
export function toStoredGroup(record: GroupRecord): StoredGroupV1 {
  const { config } = record;
  const stored: { -readonly [K in keyof StoredGroupConfigV1]: StoredGroupConfigV1[K] } = {
    maxRetries: config.maxRetries,
    retryPolicy: toStoredRetryPolicy(config.retryPolicy),
    fifo: config.fifo,
    consumeMode: config.consumeMode,
    consumptionTimeoutMs: config.consumptionTimeoutMs,
    startFrom: config.startFrom,
    broadcastInstanceTtlMs: config.broadcastInstanceTtlMs,
  };
  if (config.dlqRetentionMs !== DEFAULT_DLQ_RETENTION_MS) stored.dlqRetentionMs = config.dlqRetentionMs;
  if (config.maxRetryDurationMs !== undefined) stored.maxRetryDurationMs = config.maxRetryDurationMs;
  if (config.maxPostponeMs !== undefined) stored.maxPostponeMs = config.maxPostponeMs;
  if (config.pauseOnFailures !== undefined) {
    const { failureRatio, minOutcomes, windowMs, pauseMs, maxPauseMs } = config.pauseOnFailures;
    stored.pauseOnFailures = { failureRatio, minOutcomes, windowMs, pauseMs, maxPauseMs };
  }
  if (config.history !== undefined) stored.history = config.history;
  if (config.maxDeliveriesPerSecond !== undefined)
    stored.maxDeliveriesPerSecond = config.maxDeliveriesPerSecond;
  const pause = record.pause === undefined ? undefined : toStoredPause(record.pause);
  return {
    name: record.name,
    config: stored,
    createdAt: record.createdAt,
    ...(pause === undefined ? {} : { pause }),
  };
}

/** A stored group record as the engine's, with the defaults of fields added since layout 1 began. */
export function fromStoredGroup(stored: StoredGroupV1): GroupRecord {
  const { config } = stored;
  return {
    name: stored.name,
    config: {
      maxRetries: config.maxRetries,
      retryPolicy: fromStoredRetryPolicy(config.retryPolicy),
      fifo: config.fifo,
      consumeMode: config.consumeMode,
      consumptionTimeoutMs: config.consumptionTimeoutMs,
      startFrom: config.startFrom,
      broadcastInstanceTtlMs: config.broadcastInstanceTtlMs ?? DEFAULT_BROADCAST_INSTANCE_TTL_MS,
      dlqRetentionMs: config.dlqRetentionMs ?? DEFAULT_DLQ_RETENTION_MS,
      ...(config.maxRetryDurationMs === undefined ? {} : { maxRetryDurationMs: config.maxRetryDurationMs }),
      ...(config.maxPostponeMs === undefined ? {} : { maxPostponeMs: config.maxPostponeMs }),
      ...(config.pauseOnFailures === undefined ? {} : { pauseOnFailures: { ...config.pauseOnFailures } }),
      ...(config.history === undefined ? {} : { history: config.history }),
      ...(config.maxDeliveriesPerSecond === undefined
        ? {}
        : { maxDeliveriesPerSecond: config.maxDeliveriesPerSecond }),
    },
    createdAt: stored.createdAt,
    ...(stored.pause === undefined
      ? {}
      : { pause: { breaker: { ...stored.pause.breaker }, manuallyPaused: stored.pause.manuallyPaused } }),
  };
}

/** A pause state is stored only while it holds something: closed and not paused by hand is no pause. */
function toStoredPause(pause: StoredGroupPause): StoredGroupPauseV1 | undefined {
  if (pause.breaker.state === 'closed' && !pause.manuallyPaused) return undefined;
  return { breaker: { ...pause.breaker }, manuallyPaused: pause.manuallyPaused };
}

function toStoredRetryPolicy(policy: RetryPolicy): StoredRetryPolicyV1 {
  switch (policy.type) {
    case 'stepped':
      return { type: 'stepped', delaysMs: policy.delaysMs, ...jitterOf(policy) };
    case 'fixed':
      return { type: 'fixed', delayMs: policy.delayMs, ...jitterOf(policy) };
    case 'exponential': {
      const { initialMs, multiplier, maxMs, jitter } = policy;
      return { type: 'exponential', initialMs, multiplier, maxMs, jitter };
    }
    default:
      return assertNever(policy, 'retry policy');
  }
}

function fromStoredRetryPolicy(stored: StoredRetryPolicyV1): RetryPolicy {
  switch (stored.type) {
    case 'stepped':
      return { type: 'stepped', delaysMs: stored.delaysMs, ...jitterOf(stored) };
    case 'fixed':
      return { type: 'fixed', delayMs: stored.delayMs, ...jitterOf(stored) };
    case 'exponential': {
      const { initialMs, multiplier, maxMs, jitter } = stored;
      return { type: 'exponential', initialMs, multiplier, maxMs, jitter };
    }
    default:
      return assertNever(stored, 'stored retry policy');
  }
}

/** A stepped or fixed policy's jitter, written only when it has one, so one without is stored as before. */
function jitterOf(policy: { readonly jitter?: number }): { readonly jitter?: number } {
  return policy.jitter === undefined ? {} : { jitter: policy.jitter };
}
