import type { PauseOnFailuresConfig } from './failure-storm.js';
import {
  DEFAULT_FIFO_RETRY_POLICY,
  DEFAULT_MAX_RETRIES,
  DEFAULT_PUSH_RETRY_POLICY,
  type RetryPolicy,
} from './retry-policy.js';

/**
 * A topic's type is a guard: a `fifo` topic rejects sends without a `messageGroup`, a `delay`
 * topic rejects sends without a delay, and a `normal` topic accepts both plain and delayed
 * messages (DESIGN.md §2), as RocketMQ does.
 */
export type TopicType = 'normal' | 'fifo' | 'delay';

/** How a group's instances share a topic: each message to one instance, or to every instance. */
export type ConsumeMode = 'clustering' | 'broadcasting';

/** Where a group starts reading a topic it subscribes to for the first time. */
export type StartFrom = 'latest' | 'earliest';

/** Metadata of a topic. */
export interface TopicConfig {
  /** @default 'normal' */
  readonly type: TopicType;
  /**
   * Sends are throttled with `TOO_MANY_REQUESTS` while the largest backlog among the topic's
   * groups is at or above this many messages (rule R4). Absent: no per-topic limit.
   */
  readonly maxBacklogMessages?: number;
  /**
   * How long a message is kept after it was stored (or, for a delay message, after it became
   * due), DESIGN.md §5. Absent: {@link DEFAULT_RETENTION_MS}. Ignored for `%DLQ%<group>` topics,
   * which keep their group's `dlqRetentionMs`.
   */
  readonly retentionMs?: number;
  /** The most body bytes the topic keeps; older messages go first. Absent: no size limit. */
  readonly retentionBytes?: number;
}

/** Metadata of a consumer group (DESIGN.md §2). */
export interface GroupConfig {
  /** Retries after the first delivery; at most `maxRetries + 1` deliveries (P4, S5). @default 16 */
  readonly maxRetries: number;
  /** @default the stepped table of P3, or fixed 3000 ms when `fifo` is true (P5) */
  readonly retryPolicy: RetryPolicy;
  /**
   * The retry budget (X2): a failed message whose next retry would fall more than this many ms
   * after its first delivery goes to the DLQ instead (cause `retryBudget`), even with attempts left.
   * @default undefined (no budget: `maxRetries` alone, as RocketMQ)
   */
  readonly maxRetryDurationMs?: number;
  /**
   * X4: without a retry budget, how long a message may be postponed (`ConsumeResult.postpone`),
   * from its first postponement; past it, a postponement is a failure like any other.
   * @default undefined (3600000 ms, 1 h)
   */
  readonly maxPostponeMs?: number;
  /** Deliver each message group in order, one message at a time (P5). @default false */
  readonly fifo: boolean;
  /** @default 'clustering' */
  readonly consumeMode: ConsumeMode;
  /** How long a push delivery may stay unanswered before it fails (P2). @default 900000 (15 min) */
  readonly consumptionTimeoutMs: number;
  /** @default 'latest' */
  readonly startFrom: StartFrom;
  /**
   * `broadcasting` groups: an instance (a consumer's `clientId`) not seen for this long is
   * forgotten with its positions; seen again, it starts over from `startFrom` (B1).
   * @default 86400000 (24 h)
   */
  readonly broadcastInstanceTtlMs: number;
  /** How long the group's DLQ topic (`%DLQ%<group>`) keeps a message (DESIGN.md §5). @default 14 days */
  readonly dlqRetentionMs: number;
  /**
   * The failure-storm rule (DESIGN.md §11): pause the group while nearly every delivery fails,
   * instead of spending every message's attempts. Absent: off, as for every group of a data
   * directory written before the rule existed. See {@link PauseOnFailuresConfig} for its defaults.
   * @default undefined (off)
   */
  readonly pauseOnFailures?: PauseOnFailuresConfig;
  /**
   * Which ended deliveries the group's delivery history keeps (`GET /v1/messages/:id`): `failures`
   * keeps every one but a success (failures, timeouts, expired leases, releases, DLQ moves, held
   * retries), `full` keeps successes too, with who acked and when. Absent: the broker's
   * `--delivery-history` (itself `failures` by default).
   * @default undefined (the broker's default)
   */
  readonly history?: DeliveryHistoryMode;
  /**
   * The most messages per second the broker delivers to the group (X5), first deliveries and
   * retries together, shared among its consumers and, on a partitioned store, among its queues.
   * A message held by the limit waits Ready: it does not fail and spends no attempt.
   * @default undefined (no limit)
   */
  readonly maxDeliveriesPerSecond?: number;
}

/** Which ended deliveries a group's history keeps: all but successes, or all. */
export type DeliveryHistoryMode = 'failures' | 'full';

/** A group config as a user writes it: every field optional, omitted ones keep their default. */
export type GroupConfigInput = Partial<GroupConfig>;

/** 15 minutes, RocketMQ's default consumption timeout. */
export const DEFAULT_CONSUMPTION_TIMEOUT_MS = 15 * 60 * 1_000;

/** 24 hours: how long a broadcasting group remembers an instance it no longer sees (B1). */
export const DEFAULT_BROADCAST_INSTANCE_TTL_MS = 24 * 60 * 60 * 1_000;

/** 72 hours: how long a topic keeps a message by default, RocketMQ's `fileReservedTime` (DESIGN.md §5). */
export const DEFAULT_RETENTION_MS = 72 * 60 * 60 * 1_000;

/** 14 days: how long a group's DLQ keeps a message by default (DESIGN.md §5). */
export const DEFAULT_DLQ_RETENTION_MS = 14 * 24 * 60 * 60 * 1_000;

/** The config of a topic created without one. */
export const DEFAULT_TOPIC_CONFIG: TopicConfig = Object.freeze({ type: 'normal' });

/**
 * A topic config with its retention spelled out: a config written before retention existed (or
 * without it) keeps messages for {@link DEFAULT_RETENTION_MS}.
 */
export function resolveTopicConfig(config: TopicConfig): TopicConfig {
  return config.retentionMs === undefined ? { ...config, retentionMs: DEFAULT_RETENTION_MS } : config;
}

/**
 * Fill a partial group config with the defaults of DESIGN.md §2. The retry policy's default
 * depends on `fifo`: a FIFO group retries at a fixed 3 s, any other group on the stepped table.
 */
export function resolveGroupConfig(input: GroupConfigInput = {}): GroupConfig {
  const fifo = input.fifo ?? false;
  return {
    maxRetries: input.maxRetries ?? DEFAULT_MAX_RETRIES,
    retryPolicy: input.retryPolicy ?? (fifo ? DEFAULT_FIFO_RETRY_POLICY : DEFAULT_PUSH_RETRY_POLICY),
    fifo,
    consumeMode: input.consumeMode ?? 'clustering',
    consumptionTimeoutMs: input.consumptionTimeoutMs ?? DEFAULT_CONSUMPTION_TIMEOUT_MS,
    startFrom: input.startFrom ?? 'latest',
    broadcastInstanceTtlMs: input.broadcastInstanceTtlMs ?? DEFAULT_BROADCAST_INSTANCE_TTL_MS,
    dlqRetentionMs: input.dlqRetentionMs ?? DEFAULT_DLQ_RETENTION_MS,
    ...(input.maxRetryDurationMs === undefined ? {} : { maxRetryDurationMs: input.maxRetryDurationMs }),
    ...(input.maxPostponeMs === undefined ? {} : { maxPostponeMs: input.maxPostponeMs }),
    ...(input.pauseOnFailures === undefined ? {} : { pauseOnFailures: input.pauseOnFailures }),
    ...(input.history === undefined ? {} : { history: input.history }),
    ...(input.maxDeliveriesPerSecond === undefined
      ? {}
      : { maxDeliveriesPerSecond: input.maxDeliveriesPerSecond }),
  };
}
