import type {
  DeadLetterCause,
  GroupConfig,
  PushState,
  SimpleState,
  StoredGroupPause,
  TopicConfig,
} from '@ricochet/core';

/** A message as the store keeps it: the sent fields plus its place in the log. */
export interface StoredMessage {
  readonly messageId: string;
  readonly topic: string;
  readonly offset: number;
  readonly tag?: string;
  readonly keys?: readonly string[];
  readonly messageGroup?: string;
  readonly properties?: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  readonly bornAt: number;
  /** When the broker stored it (its clock). */
  readonly storedAt: number;
  /** A delay message is invisible to every group until this time (T1). */
  readonly deliverAt?: number;
  /** Present on the copies in a `%DLQ%<group>` topic (D1). */
  readonly deadLetter?: DeadLetterRecord;
}

/** Where a dead-lettered message came from and why it ended here (D1). */
export interface DeadLetterRecord {
  readonly group: string;
  readonly originTopic: string;
  readonly originOffset: number;
  /** Deliveries that counted toward `maxRetries`. */
  readonly attempts: number;
  readonly reason: string;
  readonly deadLetteredAt: number;
  /** Why, machine-readable (X6). Absent from copies stored before causes were recorded. */
  readonly cause?: DeadLetterCause;
  /** When the message's first failure happened (X6), when known. */
  readonly firstFailedAt?: number;
  /** The last lease number the group used, so a redriven message's new leases never repeat one. */
  readonly lastLease: number;
  /** Set once the message has been redriven to its origin topic (D2); it then leaves DLQ listings. */
  readonly redrivenAt?: number;
}

/** A message retention removes: where it is, and its id (for the index and the history). */
export interface ExpiredMessage {
  readonly topic: string;
  readonly offset: number;
  readonly messageId: string;
}

/** The message-id index: where a message lives, for dedup (R3) and the admin API. */
export interface MessageLocation {
  readonly topic: string;
  readonly offset: number;
  readonly storedAt: number;
}

export interface TopicRecord {
  readonly name: string;
  readonly config: TopicConfig;
  readonly createdAt: number;
  /**
   * Retention (DESIGN.md §5): every message below `expiredBelow` is deleted, but those a group
   * still held when retention reached them, the lowest of which is `firstOffset`. Written with the
   * deletions, so the offsets of a topic whose messages all expired survive a restart. Absent: 0.
   */
  readonly firstOffset?: number;
  readonly expiredBelow?: number;
}

export interface GroupRecord {
  readonly name: string;
  readonly config: GroupConfig;
  readonly createdAt: number;
  /** The group's breaker and manual pause (DESIGN.md §11); absent: closed, not paused. */
  readonly pause?: StoredGroupPause;
}

/** A group's progress through one topic: every offset below `nextOffset` has been dispatched. */
export interface CursorRecord {
  readonly group: string;
  readonly topic: string;
  readonly nextOffset: number;
  /**
   * Offsets at or past `nextOffset` the group has settled with no history entry (a success, with
   * `history: 'failures'`), as runs `[start, end, start, end, …]` (end exclusive). Absent: none,
   * as in every record written before successes went unrecorded.
   */
  readonly settledAhead?: readonly number[];
}

/**
 * An instance of a broadcasting group (B1), named by its consumer's `clientId`: where it stands in
 * each topic, and when it was last seen, so that one unseen for `broadcastInstanceTtlMs` is forgotten.
 */
export interface BroadcastInstanceRecord {
  readonly group: string;
  readonly clientId: string;
  /** Per topic, the offset below which this instance has consumed (or passed over) every message. */
  readonly positions: Readonly<Record<string, number>>;
  /** When a subscription of the instance last started or ended, by the broker's clock. */
  readonly lastSeenAt: number;
}

/** Counters of a group that must survive restarts. */
export interface GroupCounters {
  readonly group: string;
  readonly committed: number;
  readonly deadLettered: number;
  readonly redriven: number;
}

/**
 * The lifecycle state of one message for one group, from its first delivery until it is
 * committed or dead-lettered. `consumer` says which of core's machines drives it.
 */
export type DeliveryRecord =
  | ({ readonly consumer: 'push'; readonly state: PushState } & DeliveryFacts)
  | ({ readonly consumer: 'simple'; readonly state: SimpleState } & DeliveryFacts);

/** What a delivery record carries besides its state. */
interface DeliveryFacts {
  /** The id of the message, so settling it records history without reading the message. */
  readonly messageId: string;
  readonly scheduleKey?: ScheduleKey;
  readonly consumerId?: string;
  readonly deliveredAt?: number;
}

/** The address of a message for one group. */
export interface DeliveryAddress {
  readonly group: string;
  readonly topic: string;
  readonly offset: number;
}

/**
 * A time-ordered schedule key: entries of one group sort by due time, so "what is due" is a range
 * scan and the earliest entry is the first key. A message has at most one pending entry per
 * group, so topic and offset make the key unique.
 */
export type ScheduleKey = readonly [group: string, dueAtMs: number, topic: string, offset: number];

/** What falls due at a schedule key. */
export type ScheduleEntry =
  /** A WaitingRetry message's delay ends (P1, P3). */
  | { readonly kind: 'retryDue' }
  /** A simple consumer's lease ends unacked (S2). */
  | { readonly kind: 'leaseExpiry'; readonly lease: number }
  /** A delay message becomes visible to this group (T1). */
  | { readonly kind: 'delayDue' };

/**
 * The outcome of one delivery, for `GET /v1/messages/:messageId`; or, with `result: 'held'`, a
 * retry that fell due while its group was paused and waited (DESIGN.md §11): its `deliveredAt`
 * and `settledAt` are both the time it fell due, its `deliveryAttempt` the attempt that waited.
 */
export interface HistoryRecord {
  readonly group: string;
  /** Broadcasting groups (B1): the instance (`clientId`) this delivery was for. */
  readonly instance?: string;
  readonly topic: string;
  readonly offset: number;
  readonly deliveryAttempt: number;
  readonly consumer: 'push' | 'simple';
  readonly consumerId?: string;
  readonly deliveredAt: number;
  readonly settledAt: number;
  readonly result:
    | 'committed'
    | 'failed'
    | 'timedOut'
    | 'leaseExpired'
    | 'postponed'
    | 'released'
    | 'deadLettered'
    | 'held';
  readonly reason?: string;
  /**
   * On the delivery that moved the message to the DLQ: why, machine-readable, as its DLQ entry
   * says it (X6). Absent elsewhere, and in history written before it existed.
   */
  readonly cause?: string;
  /**
   * The principal (DESIGN.md §7) whose ack, nack or release settled the delivery. Absent when
   * the broker settled it (a timeout, a lease that expired, a session that ended), when it runs
   * without authentication, and in history written before principals existed.
   */
  readonly principal?: string;
}
