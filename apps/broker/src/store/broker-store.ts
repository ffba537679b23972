import type {
  BroadcastInstanceRecord,
  CursorRecord,
  DeliveryAddress,
  DeliveryRecord,
  GroupCounters,
  GroupRecord,
  HistoryRecord,
  MessageLocation,
  ScheduleEntry,
  ScheduleKey,
  StoredMessage,
  TopicRecord,
} from './records.js';

/**
 * The broker's durable state, behind an interface so that a shared backend can replace the
 * embedded one for multi-broker deployments.
 *
 * Writes are queued, applied in call order, and every write queued in one event turn commits in
 * one transaction (atomic; group commit). A write's promise resolves when its transaction is
 * visible; {@link durable} resolves when everything queued so far is as durable as the flush
 * policy promises. Reads see committed data only, except {@link getDelivery}, which also sees
 * this process's pending writes.
 */
export interface BrokerStore {
  listTopics(): TopicRecord[];
  putTopic(record: TopicRecord): Promise<void>;

  listGroups(): GroupRecord[];
  putGroup(record: GroupRecord): Promise<void>;
  listCursors(): CursorRecord[];
  putCursor(record: CursorRecord): Promise<void>;
  listGroupCounters(): GroupCounters[];
  putGroupCounters(record: GroupCounters): Promise<void>;
  listBroadcastInstances(): BroadcastInstanceRecord[];
  putBroadcastInstance(record: BroadcastInstanceRecord): Promise<void>;
  deleteBroadcastInstance(group: string, clientId: string): Promise<void>;

  /** The highest offset stored in a topic, or `undefined` for an empty topic. */
  lastOffset(topic: string): number | undefined;
  appendMessage(message: StoredMessage): Promise<void>;
  /** Up to `limit` committed messages of a topic from `fromOffset` on, in offset order. */
  readMessages(topic: string, fromOffset: number, limit: number): StoredMessage[];
  getMessage(topic: string, offset: number): StoredMessage | undefined;
  locateMessage(messageId: string): MessageLocation | undefined;
  putMessageLocation(messageId: string, location: MessageLocation): Promise<void>;

  getDelivery(address: DeliveryAddress): DeliveryRecord | undefined;
  putDelivery(address: DeliveryAddress, record: DeliveryRecord): Promise<void>;
  deleteDelivery(address: DeliveryAddress): Promise<void>;
  /** Every delivery record, for rebuilding the engine's view at start-up. */
  scanDeliveries(): Iterable<{ readonly address: DeliveryAddress; readonly record: DeliveryRecord }>;

  putSchedule(key: ScheduleKey, entry: ScheduleEntry): Promise<void>;
  /** One committed schedule entry, if it exists. */
  getSchedule(key: ScheduleKey): ScheduleEntry | undefined;
  deleteSchedule(key: ScheduleKey): Promise<void>;
  /** The groups that have schedule entries. */
  listScheduleGroups(): string[];
  /** The earliest committed entry of a group. */
  firstSchedule(group: string): ScheduleKey | undefined;
  /** The first `limit` committed keys of a group, earliest first; only those after `after` if given. */
  scheduleKeys(group: string, limit: number, after?: ScheduleKey): ScheduleKey[];
  /** Committed entries of a group due at or before `nowMs`, earliest first; only those after `after` if given. */
  readDueSchedule(
    group: string,
    nowMs: number,
    limit: number,
    after?: ScheduleKey,
  ): { readonly key: ScheduleKey; readonly entry: ScheduleEntry }[];
  /** How many entries a group has scheduled (a range count; for stats, not hot paths). */
  countSchedule(group: string): number;

  /**
   * Record how one delivery ended. A delivery is identified by its lease number, unique per group
   * (per instance, in a broadcasting group).
   */
  appendHistory(messageId: string, record: HistoryRecord & { readonly lease: number }): Promise<void>;
  /** Every recorded delivery of a message, grouped by group, in delivery order. */
  readHistory(messageId: string): HistoryRecord[];

  /** Resolves when every write queued so far is visible to reads. */
  committed(): Promise<void>;
  /** Resolves when every write queued so far is durable under the flush policy; rejects if one failed. */
  durable(): Promise<void>;
  close(): Promise<void>;
}
