import { mkdirSync } from 'node:fs';
import { asBinary, type Database, open, type RootDatabase } from 'lmdb';
import type { FlushPolicy } from '../config.js';
import type { BrokerStore } from './broker-store.js';
import { decideLayout, LAYOUT_VERSION, LayoutVersionError } from './layout-version.js';
import {
  dueScheduleEntries,
  firstScheduleKey,
  type ScheduleDatabase,
  scheduleCount,
  scheduleGroups,
  scheduleKeysAfter,
} from './lmdb-schedule-ranges.js';
import { type MessageRecord, MessageRecordEncoder, messageOf } from './message-records.js';
import { NOT_PENDING, PendingOverlay } from './pending-overlay.js';
import type {
  BroadcastInstanceRecord,
  CursorRecord,
  DeliveryAddress,
  DeliveryRecord,
  ExpiredMessage,
  GroupCounters,
  GroupRecord,
  HistoryRecord,
  MessageLocation,
  ScheduleEntry,
  ScheduleKey,
  StoredMessage,
  TopicRecord,
} from './records.js';
import { fromStoredDelivery, type StoredDeliveryV1, toStoredDelivery } from './schema/stored-delivery.js';
import { fromStoredGroup, type StoredGroupV1, toStoredGroup } from './schema/stored-group.js';
import { storedHistoryOf } from './schema/stored-history.js';
import { storedValueOf } from './schema/stored-message.js';
import { fromStoredTopic, type StoredTopicV1, toStoredTopic } from './schema/stored-topic.js';

/** Options of {@link openLmdbStore}. */
export interface LmdbStoreOptions {
  /** The data directory; created if missing. */
  readonly path: string;
  /** @default 'fsync' */
  readonly flushPolicy?: FlushPolicy;
  /** Called once for every write that fails (e.g. disk full), with the error. */
  readonly onWriteError?: (error: unknown) => void;
  /**
   * A scratch store, rebuilt from elsewhere at every start (the PostgreSQL store's local copy):
   * never fsynced, since nothing in it needs to survive a crash. @default false
   */
  readonly scratch?: boolean;
}

/** The page counts of one database (or the environment's main one), as lmdb-js's `getStats` reports them. */
interface LmdbPageStats {
  readonly pageSize: number;
  readonly treeBranchPageCount: number;
  readonly treeLeafPageCount: number;
  readonly overflowPages: number;
}

/** Where a database with shared structures keeps them. */
const STRUCTURES_KEY = Symbol.for('ricochet.structures');

/**
 * The embedded store: one LMDB environment in the data directory, one named database per kind of
 * record, keys ordered so that every scan the engine needs is a range read.
 *
 * | database   | key                              | value (layout 2)        |
 * |------------|----------------------------------|-------------------------|
 * | meta       | name                             | `layoutVersion`: number |
 * | topics     | topic                            | StoredTopicV1           |
 * | groups     | group                            | StoredGroupV1           |
 * | cursors    | [group, topic]                   | CursorRecord            |
 * | counters   | group                            | GroupCounters           |
 * | broadcastInstances | [group, clientId]        | BroadcastInstanceRecord |
 * | messages   | [topic, offset]                  | MessageRecord           |
 * | messageIds | messageId                        | MessageLocation         |
 * | deliveries | [group, topic, offset]           | StoredDeliveryV1        |
 * | schedule   | [group, dueAtMs, topic, offset]  | ScheduleEntry           |
 * | history    | [messageId, group, lease]        | HistoryRecord           |
 *
 * A broadcasting group's history entries are keyed per instance: `group` in the key is then
 * `<group>\u0000<clientId>`, which no group name can be.
 *
 * The records that hold core's types (topics, groups, deliveries) are stored in shapes of their
 * own (`schema/`), mapped at this boundary, so that a change to core never changes the bytes on
 * disk; messages are stored as the bytes they are delivered in (`schema/stored-message.ts`, read
 * beside layout 1's messages: `message-records.ts`); the others are the store's own types
 * (`records.ts`) and are stored as they are. The bytes of each layout are pinned by a golden test
 * in `schema/`, and a change to them is a new layout version with a migration or a refusal
 * (`layout-version.ts`). A directory with a layout this broker does not read is refused at open,
 * before anything is read or written.
 */
export function openLmdbStore(options: LmdbStoreOptions): BrokerStore {
  mkdirSync(options.path, { recursive: true });
  return new LmdbStore(options);
}

class LmdbStore implements BrokerStore {
  readonly #root: RootDatabase;
  readonly #meta: Database;
  readonly #topics: Database<StoredTopicV1, string>;
  readonly #groups: Database<StoredGroupV1, string>;
  readonly #cursors: Database<CursorRecord, [string, string]>;
  readonly #counters: Database<GroupCounters, string>;
  readonly #broadcastInstances: Database<BroadcastInstanceRecord, [string, string]>;
  readonly #messages: Database<MessageRecord, [string, number]>;
  readonly #messageIds: Database<MessageLocation, string>;
  readonly #deliveries: Database<StoredDeliveryV1, [string, string, number]>;
  readonly #schedule: ScheduleDatabase;
  readonly #history: Database<HistoryRecord, [string, string, number]>;
  readonly #flushPolicy: FlushPolicy;
  readonly #onWriteError: (error: unknown) => void;
  readonly #pendingDeliveries = new PendingOverlay<DeliveryRecord>();
  #failedWrites = 0;
  #lastWrite: Promise<boolean> | undefined;
  #lastTracked: Promise<void> | undefined;

  constructor(options: LmdbStoreOptions) {
    this.#flushPolicy = options.flushPolicy ?? 'fsync';
    this.#onWriteError = options.onWriteError ?? (() => {});
    // overlappingSync (the default on Linux/macOS) lets the fsync of one commit run while the next
    // transaction is being built; `flushed` tells when a commit is on disk. Together with
    // lmdb-js's event-turn batching this is group commit: many sends share one transaction and one
    // fsync, and each is answered only after its fsync.
    // noSubdir: false — lmdb-js would otherwise treat a path with a dot in it as a file name.
    this.#root = open({
      path: options.path,
      noSubdir: false,
      maxDbs: 16,
      ...(options.scratch ? { noSync: true } : { overlappingSync: true }),
    });
    const db = <TValue, TKey extends import('lmdb').Key>(name: string) =>
      this.#root.openDB<TValue, TKey>({ name, encoding: 'msgpack' });
    // The hot databases keep their records' property names in one shared entry (under a symbol
    // key, which sorts before every real key and is outside every range the store reads), so
    // each record is encoded as values only: smaller and faster to write and read.
    const structured = <TValue, TKey extends import('lmdb').Key>(name: string) =>
      this.#root.openDB<TValue, TKey>({ name, encoding: 'msgpack', sharedStructuresKey: STRUCTURES_KEY });
    this.#meta = db('meta');
    // Before any other database is opened: opening one creates it, and a refused directory stays untouched.
    this.#checkLayout();
    this.#topics = db('topics');
    this.#groups = db('groups');
    this.#cursors = db('cursors');
    this.#counters = db('counters');
    this.#broadcastInstances = db('broadcastInstances');
    // Layout 2's values are written as they are (`asBinary`) and read by an encoder of their own
    // (message-records.ts), given as lmdb-js documents it (`encoder.Encoder`), an option its type
    // definitions leave out.
    const messagesOptions = {
      name: 'messages',
      encoding: 'msgpack' as const,
      sharedStructuresKey: STRUCTURES_KEY,
      encoder: { Encoder: MessageRecordEncoder },
    };
    this.#messages = this.#root.openDB<MessageRecord, [string, number]>(messagesOptions);
    this.#messageIds = structured('messageIds');
    this.#deliveries = structured('deliveries');
    this.#schedule = db('schedule');
    this.#history = structured('history');
  }

  /** Write the layout version into a new directory, or refuse one with a layout this broker does not read. */
  #checkLayout(): void {
    const found: unknown = this.#meta.get('layoutVersion');
    const decision = decideLayout(found);
    // A layout 1 directory needs no rewrite (its records are read beside layout 2's): only its version.
    if (decision.action === 'initialise' || decision.action === 'migrate') {
      this.#meta.putSync('layoutVersion', LAYOUT_VERSION);
    }
    if (decision.action !== 'refuse') return;
    // Nothing was written, so there is no transaction of ours to wait for.
    void this.#root.close();
    throw new LayoutVersionError(found, decision.reason);
  }

  /**
   * lmdb-js hands every write of one transaction the same promise: the wrapped promise is reused
   * for all of them, so a transaction of thousands of writes costs two promises, not thousands.
   */
  #track(write: Promise<boolean>): Promise<void> {
    if (write === this.#lastWrite && this.#lastTracked) return this.#lastTracked;
    const done = write.then(
      () => undefined,
      (error: unknown) => {
        this.#failedWrites++;
        this.#onWriteError(error);
        throw error;
      },
    );
    // The caller may ignore the promise; the failure is already counted and reported.
    done.catch(() => {});
    this.#lastWrite = write;
    this.#lastTracked = done;
    return done;
  }

  listTopics(): TopicRecord[] {
    return [...this.#topics.getRange({})].map(({ value }) => fromStoredTopic(value));
  }
  putTopic(record: TopicRecord): Promise<void> {
    return this.#track(this.#topics.put(record.name, toStoredTopic(record)));
  }

  listGroups(): GroupRecord[] {
    return [...this.#groups.getRange({})].map(({ value }) => fromStoredGroup(value));
  }
  putGroup(record: GroupRecord): Promise<void> {
    return this.#track(this.#groups.put(record.name, toStoredGroup(record)));
  }
  listCursors(): CursorRecord[] {
    return [...this.#cursors.getRange({})].map(({ value }) => value);
  }
  putCursor(record: CursorRecord): Promise<void> {
    return this.#track(this.#cursors.put([record.group, record.topic], record));
  }
  listGroupCounters(): GroupCounters[] {
    return [...this.#counters.getRange({})].map(({ value }) => value);
  }
  putGroupCounters(record: GroupCounters): Promise<void> {
    return this.#track(this.#counters.put(record.group, record));
  }

  listBroadcastInstances(): BroadcastInstanceRecord[] {
    return [...this.#broadcastInstances.getRange({})].map(({ value }) => value);
  }
  putBroadcastInstance(record: BroadcastInstanceRecord): Promise<void> {
    return this.#track(this.#broadcastInstances.put([record.group, record.clientId], record));
  }
  deleteBroadcastInstance(group: string, clientId: string): Promise<void> {
    return this.#track(this.#broadcastInstances.remove([group, clientId]));
  }

  lastOffset(topic: string): number | undefined {
    for (const key of this.#messages.getKeys({
      start: [topic, Number.MAX_SAFE_INTEGER],
      end: [topic, -1],
      reverse: true,
      limit: 1,
    })) {
      return key[1];
    }
    return undefined;
  }
  appendMessage(message: StoredMessage): Promise<void> {
    // Written as it is; read back, the value is the `Uint8Array` a MessageRecord is.
    const value = asBinary(storedValueOf(message)) as unknown as MessageRecord;
    return this.#track(this.#messages.put([message.topic, message.offset], value));
  }
  readMessages(topic: string, fromOffset: number, limit: number): StoredMessage[] {
    const messages: StoredMessage[] = [];
    for (const { value } of this.#messages.getRange({
      start: [topic, fromOffset],
      end: [topic, Number.MAX_SAFE_INTEGER],
      limit,
    })) {
      messages.push(messageOf(value, topic));
    }
    return messages;
  }
  getMessage(topic: string, offset: number): StoredMessage | undefined {
    const value = this.#messages.get([topic, offset]);
    return value === undefined ? undefined : messageOf(value, topic);
  }
  locateMessage(messageId: string): MessageLocation | undefined {
    return this.#messageIds.get(messageId);
  }
  putMessageLocation(messageId: string, location: MessageLocation): Promise<void> {
    return this.#track(this.#messageIds.put(messageId, location));
  }

  getDelivery(address: DeliveryAddress): DeliveryRecord | undefined {
    const pending = this.#pendingDeliveries.read(address);
    if (pending !== NOT_PENDING) return pending;
    const stored = this.#deliveries.get(deliveryKey(address));
    return stored === undefined ? undefined : fromStoredDelivery(stored);
  }
  hasDelivery(address: DeliveryAddress): boolean {
    return this.#pendingDeliveries.holds(address) ?? this.#deliveries.doesExist(deliveryKey(address));
  }
  putDelivery(address: DeliveryAddress, record: DeliveryRecord): Promise<void> {
    // The overlay keeps the engine's record: reads before the commit get back what was put.
    const write = this.#track(this.#deliveries.put(deliveryKey(address), toStoredDelivery(record)));
    this.#pendingDeliveries.track(address, record, write);
    return write;
  }
  deleteDelivery(address: DeliveryAddress): Promise<void> {
    const write = this.#track(this.#deliveries.remove(deliveryKey(address)));
    this.#pendingDeliveries.track(address, undefined, write);
    return write;
  }
  *scanDeliveries(): Iterable<{ readonly address: DeliveryAddress; readonly record: DeliveryRecord }> {
    // From the lowest group name on: the shared-structures entry (a symbol key) sorts before it.
    for (const { key, value } of this.#deliveries.getRange({ start: [''] })) {
      yield { address: { group: key[0], topic: key[1], offset: key[2] }, record: fromStoredDelivery(value) };
    }
  }

  putSchedule(key: ScheduleKey, entry: ScheduleEntry): Promise<void> {
    return this.#track(this.#schedule.put([...key], entry));
  }
  getSchedule(key: ScheduleKey): ScheduleEntry | undefined {
    return this.#schedule.get([...key]);
  }
  deleteSchedule(key: ScheduleKey): Promise<void> {
    return this.#track(this.#schedule.remove([...key]));
  }
  listScheduleGroups(): string[] {
    return scheduleGroups(this.#schedule);
  }
  firstSchedule(group: string): ScheduleKey | undefined {
    return firstScheduleKey(this.#schedule, group);
  }
  scheduleKeys(group: string, limit: number, after?: ScheduleKey): ScheduleKey[] {
    return scheduleKeysAfter(this.#schedule, group, limit, after);
  }
  readDueSchedule(
    group: string,
    nowMs: number,
    limit: number,
    after?: ScheduleKey,
  ): { key: ScheduleKey; entry: ScheduleEntry }[] {
    return dueScheduleEntries(this.#schedule, group, nowMs, limit, after);
  }
  countSchedule(group: string): number {
    return scheduleCount(this.#schedule, group);
  }

  appendHistory(messageId: string, record: HistoryRecord & { readonly lease: number }): Promise<void> {
    const scope = record.instance === undefined ? record.group : `${record.group}\u0000${record.instance}`;
    return this.#track(this.#history.put([messageId, scope, record.lease], storedHistoryOf(record)));
  }
  readHistory(messageId: string): HistoryRecord[] {
    const records: HistoryRecord[] = [];
    for (const { value } of this.#history.getRange({ start: [messageId], end: [messageId, '\uffff'] })) {
      records.push(value);
    }
    return records;
  }

  deleteExpiredMessage(message: ExpiredMessage): Promise<void> {
    const { topic, offset, messageId } = message;
    let write = this.#messages.remove([topic, offset]);
    const location = this.#messageIds.get(messageId);
    if (location?.topic === topic && location.offset === offset) write = this.#messageIds.remove(messageId);
    for (const { key, value } of this.#history.getRange({ start: [messageId], end: [messageId, '\uffff'] })) {
      if (value.topic === topic && value.offset === offset) write = this.#history.remove(key);
    }
    // Every write of this turn shares one transaction and so one promise: the last one stands for all.
    return this.#track(write);
  }

  storedBytes(): number {
    const pagesOf = (stats: LmdbPageStats) =>
      stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages;
    const rootStats = this.#root.getStats() as LmdbPageStats & { readonly root: LmdbPageStats };
    let pages = pagesOf(rootStats.root);
    for (const db of this.#databases()) pages += pagesOf(db.getStats() as LmdbPageStats);
    return pages * rootStats.pageSize;
  }

  #databases(): Database[] {
    return [
      this.#meta,
      this.#topics,
      this.#groups,
      this.#cursors,
      this.#counters,
      this.#broadcastInstances,
      this.#messages,
      this.#messageIds,
      this.#deliveries,
      this.#schedule,
      this.#history,
    ] as Database[];
  }

  async committed(): Promise<void> {
    await this.#root.committed;
  }

  async durable(): Promise<void> {
    const failedBefore = this.#failedWrites;
    await (this.#flushPolicy === 'fsync' ? this.#root.flushed : this.#root.committed);
    if (this.#failedWrites !== failedBefore) throw new Error('a write in this commit failed');
  }

  async close(): Promise<void> {
    await this.#root.flushed;
    await this.#root.close();
  }
}

function deliveryKey(address: DeliveryAddress): [string, string, number] {
  return [address.group, address.topic, address.offset];
}
