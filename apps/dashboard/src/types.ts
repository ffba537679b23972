import type { RetryPolicy } from '@ricochet/core';

/** The admin API's answers, as far as the dashboard reads them (docs/guides/operations.md). */
export interface GroupStats {
  readonly ready: number;
  readonly inflight: number;
  readonly waitingRetry: number;
  readonly dlq: number;
  readonly committed: number;
}

export interface GroupConfig {
  readonly maxRetries: number;
  readonly retryPolicy: RetryPolicy;
  readonly fifo: boolean;
  readonly consumeMode: 'clustering' | 'broadcasting';
  readonly consumptionTimeoutMs: number;
  readonly startFrom: 'latest' | 'earliest';
  readonly broadcastInstanceTtlMs: number;
}

export interface GroupView {
  readonly name: string;
  readonly config: GroupConfig;
  readonly stats: GroupStats;
}

export interface TopicView {
  readonly name: string;
  readonly config: { readonly type: string; readonly maxBacklogMessages?: number };
  readonly stats: { readonly firstOffset: number; readonly nextOffset: number; readonly messages: number };
}

export interface GroupCounters {
  readonly name: string;
  readonly delivered: number;
  readonly acked: number;
  readonly retried: number;
  readonly deadLettered: number;
  readonly released: number;
}

export interface Counters {
  readonly topics: readonly { readonly name: string; readonly sent: number }[];
  readonly groups: readonly GroupCounters[];
}

export interface StoredMessageView {
  readonly messageId: string;
  readonly topic?: string;
  readonly offset: number;
  readonly tag?: string;
  readonly keys?: readonly string[];
  readonly messageGroup?: string;
  readonly properties?: Readonly<Record<string, string>>;
  readonly bornAt: number;
  readonly bodyBytes: number;
  readonly bodyBase64: string;
}

export interface DeadLetterView extends StoredMessageView {
  readonly originTopic?: string;
  readonly attempts?: number;
  readonly reason?: string;
  readonly deadLetteredAt?: number;
}

export interface HistoryEntry {
  readonly group: string;
  readonly instance?: string;
  readonly topic: string;
  readonly offset: number;
  readonly deliveryAttempt: number;
  readonly consumer: 'push' | 'simple';
  readonly consumerId?: string;
  readonly deliveredAt: number;
  readonly settledAt: number;
  readonly result: string;
  readonly reason?: string;
}

export interface MessageGroupView {
  readonly group: string;
  readonly instance?: string;
  readonly state: string;
  readonly deliveryAttempt?: number;
  readonly history: readonly HistoryEntry[];
}

export interface MessageView {
  readonly message: StoredMessageView;
  readonly groups: readonly MessageGroupView[];
}

export interface FifoHead {
  readonly topic: string;
  readonly messageGroup: string;
  readonly offset: number;
  readonly messageId?: string;
  readonly state: string;
  readonly deliveryAttempt?: number;
  readonly retryAtMs?: number;
}
