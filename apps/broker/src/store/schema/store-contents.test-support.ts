import type { BrokerStore } from '../broker-store.js';
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
} from '../records.js';

/**
 * Everything a data directory holds, as the engine writes and reads it through {@link BrokerStore}.
 * A history entry is written with its lease number, which lives in its key and is not read back.
 */
export interface StoreContents<THistory extends HistoryRecord = HistoryRecord & { readonly lease: number }> {
  readonly topics: readonly TopicRecord[];
  readonly groups: readonly GroupRecord[];
  readonly cursors: readonly CursorRecord[];
  readonly counters: readonly GroupCounters[];
  readonly broadcastInstances: readonly BroadcastInstanceRecord[];
  readonly messages: readonly StoredMessage[];
  readonly locations: readonly (readonly [messageId: string, location: MessageLocation])[];
  readonly deliveries: readonly { readonly address: DeliveryAddress; readonly record: DeliveryRecord }[];
  readonly schedule: readonly { readonly key: ScheduleKey; readonly entry: ScheduleEntry }[];
  readonly history: readonly (readonly [messageId: string, record: THistory])[];
}

/** Write `contents` through the store, in the order it lists them, and wait for the commit. */
export async function writeContents(store: BrokerStore, contents: StoreContents): Promise<void> {
  for (const record of contents.topics) void store.putTopic(record);
  for (const record of contents.groups) void store.putGroup(record);
  for (const record of contents.cursors) void store.putCursor(record);
  for (const record of contents.counters) void store.putGroupCounters(record);
  for (const record of contents.broadcastInstances) void store.putBroadcastInstance(record);
  for (const message of contents.messages) void store.appendMessage(message);
  for (const [messageId, location] of contents.locations) void store.putMessageLocation(messageId, location);
  for (const { address, record } of contents.deliveries) void store.putDelivery(address, record);
  for (const { key, entry } of contents.schedule) void store.putSchedule(key, entry);
  for (const [messageId, record] of contents.history) void store.appendHistory(messageId, record);
  await store.durable();
}

/** Read back everything the store holds, through the reads the engine uses. */
export function readContents(store: BrokerStore): StoreContents<HistoryRecord> {
  const topics = store.listTopics();
  const groups = store.listGroups();
  const messages = topics.flatMap(({ name }) =>
    store.readMessages(name, 0, 1_000).map((message) => ({ ...message, body: new Uint8Array(message.body) })),
  );
  const messageIds = [...new Set(messages.map((message) => message.messageId))];
  const deliveries = [...store.scanDeliveries()];
  // History is read by message id: every id the store knows of, stored messages first.
  const historyIds = [...new Set([...messageIds, ...deliveries.map(({ record }) => record.messageId)])];
  return {
    topics,
    groups,
    cursors: store.listCursors(),
    counters: store.listGroupCounters(),
    broadcastInstances: store.listBroadcastInstances(),
    messages,
    locations: messageIds.flatMap((messageId) => {
      const location = store.locateMessage(messageId);
      return location ? [[messageId, location] as const] : [];
    }),
    deliveries,
    schedule: groups.flatMap(({ name }) => store.readDueSchedule(name, Number.MAX_SAFE_INTEGER, 1_000)),
    history: historyIds.flatMap((messageId) =>
      store.readHistory(messageId).map((record) => [messageId, record] as const),
    ),
  };
}

/** `contents` as {@link readContents} gives it back: history entries without their lease. */
export function asReadBack(contents: StoreContents): StoreContents<HistoryRecord> {
  return {
    ...contents,
    history: contents.history.map(
      ([messageId, { lease: _lease, ...record }]) => [messageId, record] as const,
    ),
  };
}
