import { rmSync } from 'node:fs';
import { Packr } from 'msgpackr';
import type { BrokerStore } from '../broker-store.js';
import { NOT_PENDING, PendingOverlay } from '../pending-overlay.js';
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
} from '../records.js';
import { toStoredDelivery } from '../schema/stored-delivery.js';
import { toStoredGroup } from '../schema/stored-group.js';
import { PackedStoredMessage, packStoredMessage } from '../schema/stored-message.js';
import { toStoredTopic } from '../schema/stored-topic.js';
import type { Sql } from './driver.js';
import type { PostgresStoreOptions } from './postgres-store-options.js';
import type { RowValues, TableName } from './postgres-tables.js';
import type { StoreLease } from './store-lease.js';
import type { MirrorWrite } from './write-batch.js';
import { WritePipeline } from './write-pipeline.js';

/** Plain MessagePack, no shared structures: every broker reads every row. */
const packr = new Packr({ useRecords: false });
const pack = (value: unknown): Uint8Array => packr.pack(value);

/** What {@link openPostgresStore} hands the store it opened. */
export interface PostgresStoreParts {
  readonly options: PostgresStoreOptions;
  readonly writer: Sql;
  readonly reader: Sql;
  readonly lease: StoreLease;
  readonly mirror: BrokerStore;
  /** Filled by the local copy's write-error hook. */
  readonly localFailures: unknown[];
  /** The copy's position when this broker took the store (`WarmCopy.rowSeq`). */
  readonly rowSeq: number;
}

/**
 * The store seam over PostgreSQL once this broker holds the lease (`openPostgresStore` takes it):
 * reads from the local copy, which holds what committed; writes through the pipeline
 * (`write-pipeline.ts`), which commits them fenced and in order, replays them on the copy, and
 * publishes them to the standbys' feed.
 */
export class PostgresStore implements BrokerStore {
  readonly #options: PostgresStoreOptions;
  readonly #writer: Sql;
  readonly #reader: Sql;
  readonly #lease: StoreLease;
  readonly #mirror: BrokerStore;
  readonly #writes: WritePipeline;
  readonly #pendingDeliveries = new PendingOverlay<DeliveryRecord>();
  #closing = false;

  constructor(parts: PostgresStoreParts) {
    const { options, writer, lease, mirror } = parts;
    this.#options = options;
    this.#writer = writer;
    this.#reader = parts.reader;
    this.#lease = lease;
    this.#mirror = mirror;
    const queue = options.queue ?? 0;
    const hub = options.standbyFeed?.hub;
    this.#writes = new WritePipeline({
      writer,
      lease,
      mirror,
      localFailures: parts.localFailures,
      writeRetryMs: options.writeRetryMs ?? 5_000,
      rowSeq: parts.rowSeq,
      ...(options.onWriteError ? { onWriteError: options.onWriteError } : {}),
      onLost: (error) => {
        // Another broker owns the queue now, or soon: the standbys follow it instead.
        hub?.unfollowAll(queue);
        options.onLost?.(error);
      },
      ...(options.onFenced ? { onFenced: options.onFenced } : {}),
      ...(hub === undefined
        ? {}
        : { feed: { wanted: () => hub.followed(queue), publish: (batch) => hub.publish(queue, batch) } }),
    });
  }

  // ─── Reads: the local copy, which holds what committed ─────────────────────────────────────

  listTopics(): TopicRecord[] {
    return this.#mirror.listTopics();
  }
  listGroups(): GroupRecord[] {
    return this.#mirror.listGroups();
  }
  listCursors(): CursorRecord[] {
    return this.#mirror.listCursors();
  }
  listGroupCounters(): GroupCounters[] {
    return this.#mirror.listGroupCounters();
  }
  listBroadcastInstances(): BroadcastInstanceRecord[] {
    return this.#mirror.listBroadcastInstances();
  }
  lastOffset(topic: string): number | undefined {
    return this.#mirror.lastOffset(topic);
  }
  readMessages(topic: string, fromOffset: number, limit: number): StoredMessage[] {
    return this.#mirror.readMessages(topic, fromOffset, limit);
  }
  getMessage(topic: string, offset: number): StoredMessage | undefined {
    return this.#mirror.getMessage(topic, offset);
  }
  locateMessage(messageId: string): MessageLocation | undefined {
    return this.#mirror.locateMessage(messageId);
  }
  getDelivery(address: DeliveryAddress): DeliveryRecord | undefined {
    const pending = this.#pendingDeliveries.read(address);
    return pending === NOT_PENDING ? this.#mirror.getDelivery(address) : pending;
  }
  hasDelivery(address: DeliveryAddress): boolean {
    return this.#pendingDeliveries.holds(address) ?? this.#mirror.hasDelivery(address);
  }
  scanDeliveries(): Iterable<{ readonly address: DeliveryAddress; readonly record: DeliveryRecord }> {
    return this.#mirror.scanDeliveries();
  }
  getSchedule(key: ScheduleKey): ScheduleEntry | undefined {
    return this.#mirror.getSchedule(key);
  }
  listScheduleGroups(): string[] {
    return this.#mirror.listScheduleGroups();
  }
  firstSchedule(group: string): ScheduleKey | undefined {
    return this.#mirror.firstSchedule(group);
  }
  scheduleKeys(group: string, limit: number, after?: ScheduleKey): ScheduleKey[] {
    return this.#mirror.scheduleKeys(group, limit, after);
  }
  readDueSchedule(group: string, nowMs: number, limit: number, after?: ScheduleKey) {
    return this.#mirror.readDueSchedule(group, nowMs, limit, after);
  }
  countSchedule(group: string): number {
    return this.#mirror.countSchedule(group);
  }
  readHistory(messageId: string): HistoryRecord[] {
    return this.#mirror.readHistory(messageId);
  }

  /**
   * The size of the data, measured on the local copy (LMDB's pages in use). PostgreSQL's own
   * relation sizes do not shrink when retention deletes rows (vacuum only marks the space free for
   * reuse), so a `--max-store-bytes` judged by them would refuse sends for good once reached.
   */
  storedBytes(): number {
    return this.#mirror.storedBytes();
  }

  // ─── Writes: queued into the turn's batch ──────────────────────────────────────────────────

  putTopic(record: TopicRecord): Promise<void> {
    return this.#put('topics', [record.name, pack(toStoredTopic(record))], (m) => m.putTopic(record));
  }
  putGroup(record: GroupRecord): Promise<void> {
    return this.#put('groups', [record.name, pack(toStoredGroup(record))], (m) => m.putGroup(record));
  }
  putCursor(record: CursorRecord): Promise<void> {
    return this.#put('cursors', [record.group, record.topic, pack(record)], (m) => m.putCursor(record));
  }
  putGroupCounters(record: GroupCounters): Promise<void> {
    return this.#put('counters', [record.group, pack(record)], (m) => m.putGroupCounters(record));
  }
  putBroadcastInstance(record: BroadcastInstanceRecord): Promise<void> {
    return this.#put('broadcastInstances', [record.group, record.clientId, pack(record)], (m) =>
      m.putBroadcastInstance(record),
    );
  }
  deleteBroadcastInstance(group: string, clientId: string): Promise<void> {
    return this.#delete('broadcastInstances', [group, clientId], (m) =>
      m.deleteBroadcastInstance(group, clientId),
    );
  }
  appendMessage(message: StoredMessage): Promise<void> {
    // Encoded once: the row and the local copy hold the same value.
    const packed = packStoredMessage(message);
    const value = PackedStoredMessage.valueOf(packed);
    return this.#put('messages', [message.topic, message.offset, value], (m) => m.appendMessage(packed));
  }
  putMessageLocation(messageId: string, location: MessageLocation): Promise<void> {
    // Local only: the message's own row holds its id (postgres-tables.ts).
    const batch = this.#writes.batch();
    batch.writes.local((m) => m.putMessageLocation(messageId, location));
    return batch.done;
  }
  putDelivery(address: DeliveryAddress, record: DeliveryRecord): Promise<void> {
    const write = this.#put(
      'deliveries',
      [address.group, address.topic, address.offset, pack(toStoredDelivery(record))],
      (m) => m.putDelivery(address, record),
    );
    this.#pendingDeliveries.track(address, record, write);
    return write;
  }
  deleteDelivery(address: DeliveryAddress): Promise<void> {
    const write = this.#delete('deliveries', [address.group, address.topic, address.offset], (m) =>
      m.deleteDelivery(address),
    );
    this.#pendingDeliveries.track(address, undefined, write);
    return write;
  }
  putSchedule(key: ScheduleKey, entry: ScheduleEntry): Promise<void> {
    return this.#put('schedule', [key[0], key[1], key[2], key[3], pack(entry)], (m) =>
      m.putSchedule(key, entry),
    );
  }
  deleteSchedule(key: ScheduleKey): Promise<void> {
    return this.#delete('schedule', [key[0], key[1], key[2], key[3]], (m) => m.deleteSchedule(key));
  }
  appendHistory(messageId: string, record: HistoryRecord & { readonly lease: number }): Promise<void> {
    return this.#put(
      'history',
      [
        messageId,
        record.group,
        record.instance ?? '',
        record.lease,
        record.topic,
        record.offset,
        pack(record),
      ],
      (m) => m.appendHistory(messageId, record),
    );
  }
  deleteExpiredMessage(message: ExpiredMessage): Promise<void> {
    const batch = this.#writes.batch();
    batch.writes.expire(message, (m) => m.deleteExpiredMessage(message));
    return batch.done;
  }

  // ─── Commit points ──────────────────────────────────────────────────────────────────────────

  committed(): Promise<void> {
    return this.#writes.committed();
  }
  durable(): Promise<void> {
    return this.#writes.durable();
  }

  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    this.#writes.stop();
    await this.#writes.committed();
    const lost = this.#writes.lost !== undefined;
    this.#options.standbyFeed?.hub.unfollowAll(this.#options.queue ?? 0);
    if (!lost) await this.#lease.release(this.#writer).catch(() => {});
    // A lost store has nothing left worth waiting for: a query still pending on a connection the
    // database ended (or that hangs) would hold the close, and the queue's reopening, 5 s.
    const endTimeoutS = lost ? 0 : 5;
    await Promise.allSettled([
      this.#writer.end({ timeout: endTimeoutS }),
      this.#reader.end({ timeout: endTimeoutS }),
      this.#lease.close(),
    ]);
    await this.#mirror.close();
    rmSync(this.#options.cacheDir, { recursive: true, force: true });
  }

  #put(table: TableName, row: RowValues, mirrorWrite: MirrorWrite): Promise<void> {
    const batch = this.#writes.batch();
    batch.writes.put(table, row, mirrorWrite);
    return batch.done;
  }

  #delete(table: TableName, key: RowValues, mirrorWrite: MirrorWrite): Promise<void> {
    const batch = this.#writes.batch();
    batch.writes.delete(table, key, mirrorWrite);
    return batch.done;
  }
}
