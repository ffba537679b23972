/**
 * The admin API's answers as the CLI reads them (apps/broker/src/engine/*-view.ts, DESIGN.md §4,
 * §8). Fields a newer broker adds are shown by `--json` untouched; the tables use these.
 */
export interface TopicView {
  readonly name: string;
  readonly config: { readonly type: string; readonly maxBacklogMessages?: number } & Record<string, unknown>;
  readonly stats: { readonly firstOffset: number; readonly nextOffset: number; readonly messages: number };
}

export interface GroupStats {
  readonly ready: number;
  readonly inflight: number;
  readonly waitingRetry: number;
  readonly dlq: number;
  readonly committed: number;
}

export interface GroupView {
  readonly name: string;
  readonly config: {
    readonly maxRetries: number;
    readonly retryPolicy: unknown;
    readonly fifo: boolean;
    readonly consumeMode: string;
    readonly consumptionTimeoutMs: number;
    readonly startFrom: string;
    readonly broadcastInstanceTtlMs?: number;
  } & Record<string, unknown>;
  readonly stats: GroupStats;
}

/** One entry of `GET /v1/groups/:group/dlq`. */
export interface DeadLetterEntry {
  readonly messageId: string;
  /** Its offset in `%DLQ%<group>`: unique, unlike the id (a redriven message may fail again). */
  readonly offset: number;
  readonly tag?: string;
  readonly keys?: readonly string[];
  readonly messageGroup?: string;
  readonly properties?: Readonly<Record<string, string>>;
  readonly bornAt: number;
  readonly originTopic?: string;
  readonly originOffset?: number;
  readonly attempts?: number;
  readonly reason?: string;
  readonly deadLetteredAt?: number;
  readonly bodyBytes: number;
  readonly bodyBase64: string;
}

export interface DeadLetterPage {
  readonly messages: readonly DeadLetterEntry[];
  readonly cursor: number | null;
}

/** One delivery of a message to a group, as `GET /v1/messages/:id` lists them. */
export interface HistoryEntry {
  readonly deliveryAttempt: number;
  readonly consumer: string;
  readonly consumerId?: string;
  readonly instance?: string;
  readonly deliveredAt: number;
  readonly settledAt: number;
  readonly result: string;
  readonly reason?: string;
}

export interface MessageView {
  readonly message: {
    readonly messageId: string;
    readonly topic: string;
    readonly offset: number;
    readonly tag?: string;
    readonly keys?: readonly string[];
    readonly messageGroup?: string;
    readonly properties?: Readonly<Record<string, string>>;
    readonly bornAt: number;
    readonly deliverAt?: number;
    readonly bodyBytes: number;
    readonly bodyBase64: string;
  };
  readonly groups: readonly {
    readonly group: string;
    readonly instance?: string;
    readonly state: string;
    readonly deliveryAttempt?: number;
    readonly history: readonly HistoryEntry[];
  }[];
}

/** A live broker of the database, as `GET /v1/cluster` lists it. */
export interface ClusterBrokerView {
  readonly brokerId: string;
  readonly advertiseUrl?: string;
  readonly advertiseTcpUrl?: string;
  readonly storeQueues: number;
  readonly expiresInMs: number;
  readonly assignedQueues: readonly number[];
  readonly ownedQueues: readonly number[];
}

/** A queue of the store, as `GET /v1/cluster` lists it: no `owner` while no lease is live. */
export interface ClusterQueueView {
  readonly queue: number;
  readonly owner?: string;
  readonly epoch: number;
  readonly expiresInMs: number;
  readonly assignedTo?: string;
}

/** `GET /v1/cluster`: served by brokers on a PostgreSQL store only. */
export interface ClusterView {
  readonly brokers: readonly ClusterBrokerView[];
  readonly queues: readonly ClusterQueueView[];
}
