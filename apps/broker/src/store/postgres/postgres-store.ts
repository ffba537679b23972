import { rmSync } from 'node:fs';
import { Packr } from 'msgpackr';
import type { FlushPolicy } from '../../config.js';
import type { BrokerStore } from '../broker-store.js';
import { openLmdbStore } from '../lmdb-store.js';
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
import { toStoredTopic } from '../schema/stored-topic.js';
import postgres, { type Sql } from './driver.js';
import { LivenessLock } from './liveness-lock.js';
import { preparePostgresSchema } from './postgres-schema.js';
import type { RowValues, TableName } from './postgres-tables.js';
import { queueConnection } from './queue-schema.js';
import { type LeaseGate, type LeaseHolder, StoreLease } from './store-lease.js';
import { keepWarm, WarmCopy, type Warming, type WarmPace } from './warm-copy.js';
import type { MirrorWrite } from './write-batch.js';
import { WritePipeline } from './write-pipeline.js';

/** Options of {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  /** `postgres://user[:password]@host[:port]/database`. */
  readonly url: string;
  /** Where the local copy of the store lives (an LMDB scratch store, rebuilt at every open). */
  readonly cacheDir: string;
  /**
   * Which queue of the database this store is (`queue-schema.ts`): an integer from 0 to 63, each
   * a whole store with its own lease, owned apart from the others. 0 is the database's store as
   * brokers that know nothing of queues open it. @default 0
   */
  readonly queue?: number;
  /** This broker's name in the lease row, for the log lines of brokers waiting for it. */
  readonly owner: string;
  /** Where this broker serves clients, written in the lease row for standbys to relay to. */
  readonly advertiseUrl?: string;
  /** Where its TCP listener serves clients, in the lease row too. */
  readonly advertiseTcpUrl?: string;
  /** @default 'fsync' (`synchronous_commit = on`); `commit`: `synchronous_commit = off`. */
  readonly flushPolicy?: FlushPolicy;
  /** How long the store lease lasts without renewal. @default 10_000 */
  readonly leaseTtlMs?: number;
  /** How long a failed transaction is retried (it is idempotent) before the store gives up. @default 5_000 */
  readonly writeRetryMs?: number;
  /** Called once for every write that fails for good, with the error. */
  readonly onWriteError?: (error: unknown) => void;
  /** Called while another broker holds the lease, before each wait. */
  readonly onWaitingForLease?: (holder: LeaseHolder) => void;
  /**
   * Called once when the store stops accepting writes: the lease was taken over (this broker was
   * paused or cut off past its TTL), or a transaction failed for longer than `writeRetryMs`.
   */
  readonly onLost?: (error: unknown) => void;
  /** Called each time the database's fence refuses a transaction of this store: another broker took the lease. */
  readonly onFenced?: () => void;
  /** Called once a standby loaded its local copy's messages and history, which it then keeps up to date. */
  readonly onWarmCopyLoaded?: (elapsedMs: number) => void;
  /** Called when a standby's step to keep its local copy up to date failed, the first of a run (it tries again). */
  readonly onWarmCopyError?: (error: unknown) => void;
  /** Abandon the wait for the lease (the returned promise rejects). */
  readonly signal?: AbortSignal;
  /**
   * Closed while this broker may not take the lease yet: until it opens, the broker waits as a
   * standby, keeping its copy warm. A split store's queues past 0 wait for queue 0 this way.
   * @default always open
   */
  readonly leaseGate?: LeaseGate;
}

/**
 * How often a standby reads what changed in the database into its local copy: often while the
 * queue takes writes, so that each read copies few (`keepWarm`), rarely while it takes none.
 */
const WARM_PACE: WarmPace = { busyMs: 50, idleMs: 1_000 };

/** Plain MessagePack, no shared structures: every broker reads every row. */
const packr = new Packr({ useRecords: false });
const pack = (value: unknown): Uint8Array => packr.pack(value);

/**
 * A store on PostgreSQL (DESIGN.md §9): the tables are the durable state, this broker owns them
 * through a lease whose epoch fences every transaction, and a local LMDB scratch copy answers the
 * seam's synchronous reads.
 *
 * Opening takes the lease (waiting while another broker holds it: a standby), then loads every
 * table into a fresh local copy. Each write becomes a row of the turn's batch, which
 * `write-pipeline.ts` commits, fenced and in order, then replays on the local copy before its
 * promise resolves (rule 4: reads see committed data, and what the engine keeps in memory until a
 * write resolves is readable afterwards). See "The store seam" in docs/architecture.md.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<BrokerStore> {
  const flushPolicy = options.flushPolicy ?? 'fsync';
  const ttlMs = options.leaseTtlMs ?? 10_000;
  const queue = options.queue ?? 0;
  const inQueue = queueConnection(options.url, queue);
  const common = { onnotice: () => {}, connect_timeout: 10, max_lifetime: null, idle_timeout: 0 } as const;
  // One connection for every write transaction: PostgreSQL then commits them in the order sent.
  // Each transaction holds the lease row's lock from its fence to its commit; a broker paused in
  // between (SIGSTOP, a frozen VM: its kernel keeps the connection up) would hold it, and block
  // every broker's take of the lease, for as long as the pause. Past the lease's TTL idle inside
  // a transaction, PostgreSQL ends the session instead: the lock goes, another broker takes the
  // lease, and the woken broker's retry of that transaction is refused by the fence.
  const writer = postgres(options.url, {
    ...common,
    max: 1,
    connection: {
      ...inQueue,
      synchronous_commit: flushPolicy === 'fsync' ? 'on' : 'off',
      idle_in_transaction_session_timeout: ttlMs,
    },
  });
  const reader = postgres(options.url, { ...common, max: 2, connection: inQueue });
  const liveness = LivenessLock.open(options.url, { queue });
  let mirror: BrokerStore | undefined;
  let warming: Warming | undefined;
  try {
    await preparePostgresSchema(reader, queue);
    rmSync(options.cacheDir, { recursive: true, force: true });
    // A failed local write (the cache's disk full) is reported by the store's next replay.
    const localFailures: unknown[] = [];
    const localCopy = openLmdbStore({
      path: options.cacheDir,
      flushPolicy: 'commit',
      scratch: true,
      onWriteError: (error) => localFailures.push(error),
    });
    mirror = localCopy;
    const copy = new WarmCopy(localCopy);
    const lease = await StoreLease.acquire(reader, {
      owner: options.owner,
      ttlMs,
      liveness,
      ...(options.advertiseUrl === undefined ? {} : { advertiseUrl: options.advertiseUrl }),
      ...(options.advertiseTcpUrl === undefined ? {} : { advertiseTcpUrl: options.advertiseTcpUrl }),
      onWaiting: (holder) => {
        // A standby: keep the copy close to the database, so that taking over reads only what changed.
        warming ??= keepWarm(copy, reader, WARM_PACE, {
          ...(options.onWarmCopyLoaded ? { onLoaded: options.onWarmCopyLoaded } : {}),
          ...(options.onWarmCopyError ? { onError: options.onWarmCopyError } : {}),
        });
        options.onWaitingForLease?.(holder);
      },
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.leaseGate ? { gate: options.leaseGate } : {}),
    });
    await warming?.stop();
    await copy.complete(reader);
    if (localFailures.length > 0) throw localFailures[0];
    return new PostgresStore({ options, writer, reader, lease, mirror: localCopy, localFailures });
  } catch (error) {
    await warming?.stop();
    await mirror?.close();
    await Promise.allSettled([writer.end({ timeout: 1 }), reader.end({ timeout: 1 }), liveness.close()]);
    throw error;
  }
}

interface PostgresStoreParts {
  readonly options: PostgresStoreOptions;
  readonly writer: Sql;
  readonly reader: Sql;
  readonly lease: StoreLease;
  readonly mirror: BrokerStore;
  /** Filled by the local copy's write-error hook. */
  readonly localFailures: unknown[];
}

class PostgresStore implements BrokerStore {
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
    this.#writes = new WritePipeline({
      writer,
      lease,
      mirror,
      localFailures: parts.localFailures,
      writeRetryMs: options.writeRetryMs ?? 5_000,
      ...(options.onWriteError ? { onWriteError: options.onWriteError } : {}),
      ...(options.onLost ? { onLost: options.onLost } : {}),
      ...(options.onFenced ? { onFenced: options.onFenced } : {}),
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
    return this.#put('messages', [message.topic, message.offset, pack(message)], (m) =>
      m.appendMessage(message),
    );
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
