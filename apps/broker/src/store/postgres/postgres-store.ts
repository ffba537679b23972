import { rmSync } from 'node:fs';
import { Packr } from 'msgpackr';
import postgres, { type Sql } from 'postgres';
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
import { loadMirror } from './mirror-load.js';
import { preparePostgresSchema } from './postgres-schema.js';
import type { TableName } from './postgres-tables.js';
import { isFenced, type LeaseHolder, StoreLease } from './store-lease.js';
import { type MirrorWrite, type RowValues, WriteBatch } from './write-batch.js';

/** Options of {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  /** `postgres://user[:password]@host[:port]/database`. */
  readonly url: string;
  /** Where the local copy of the store lives (an LMDB scratch store, rebuilt at every open). */
  readonly cacheDir: string;
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
  /** Abandon the wait for the lease (the returned promise rejects). */
  readonly signal?: AbortSignal;
}

/** Plain MessagePack, no shared structures: every broker reads every row. */
const packr = new Packr({ useRecords: false });
const pack = (value: unknown): Uint8Array => packr.pack(value);

/**
 * A store on PostgreSQL (DESIGN.md §9): the tables are the durable state, this broker owns them
 * through a lease whose epoch fences every transaction, and a local LMDB scratch copy answers the
 * seam's synchronous reads.
 *
 * Opening takes the lease (waiting while another broker holds it: a standby), then loads every
 * table into a fresh local copy. Writes gather per event turn into one transaction on a single
 * connection, so transactions commit in queue order (rules 2 and 3); while one is in flight, later
 * turns' writes gather into the next (group commit). Once PostgreSQL acknowledged a `COMMIT`, the
 * batch is replayed on the local copy, and only then do its write promises resolve (rule 4: reads
 * see committed data, and what the engine keeps in memory until a write resolves is readable
 * afterwards). See "The store seam" in docs/architecture.md.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<BrokerStore> {
  const flushPolicy = options.flushPolicy ?? 'fsync';
  const ttlMs = options.leaseTtlMs ?? 10_000;
  const common = { onnotice: () => {}, connect_timeout: 10, max_lifetime: null, idle_timeout: 0 } as const;
  // One connection for every write transaction: PostgreSQL then commits them in the order sent.
  const writer = postgres(options.url, {
    ...common,
    max: 1,
    connection: { synchronous_commit: flushPolicy === 'fsync' ? 'on' : 'off' },
  });
  const reader = postgres(options.url, { ...common, max: 2 });
  let mirror: BrokerStore | undefined;
  try {
    await preparePostgresSchema(reader);
    const lease = await StoreLease.acquire(reader, {
      owner: options.owner,
      ttlMs,
      ...(options.advertiseUrl === undefined ? {} : { advertiseUrl: options.advertiseUrl }),
      ...(options.advertiseTcpUrl === undefined ? {} : { advertiseTcpUrl: options.advertiseTcpUrl }),
      ...(options.onWaitingForLease ? { onWaiting: options.onWaitingForLease } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
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
    await loadMirror(reader, localCopy);
    if (localFailures.length > 0) throw localFailures[0];
    return new PostgresStore({ options, writer, reader, lease, mirror: localCopy, localFailures });
  } catch (error) {
    await mirror?.close();
    await Promise.allSettled([writer.end({ timeout: 1 }), reader.end({ timeout: 1 })]);
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

/** One transaction's writes and the promise every one of them returns. */
interface QueuedBatch {
  readonly writes: WriteBatch;
  readonly done: Promise<void>;
  /** Set once `done` settled: a batch given up while its transaction hung is not failed twice. */
  settled: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

class PostgresStore implements BrokerStore {
  readonly #options: PostgresStoreOptions;
  readonly #writer: Sql;
  readonly #reader: Sql;
  readonly #lease: StoreLease;
  readonly #mirror: BrokerStore;
  readonly #localFailures: unknown[];
  readonly #pendingDeliveries = new PendingOverlay<DeliveryRecord>();
  readonly #heartbeat: NodeJS.Timeout;
  /** The batch gathering this turn's writes, not yet sent. */
  #gathering: QueuedBatch | undefined;
  /** The batch whose transaction is in flight. */
  #inFlight: QueuedBatch | undefined;
  /** The last batch queued, sent or not: what {@link committed} waits for. */
  #last: Promise<void> = Promise.resolve();
  #startScheduled = false;
  /** When the last renewal that succeeded was sent (a write transaction renews too). */
  #renewedAt = Date.now();
  /** A heartbeat query is out. */
  #renewing = false;
  /** Once given up: the failed batch every later write joins. */
  #refused: QueuedBatch | undefined;
  #failedWrites = 0;
  /** Set once the store gave up: every later write fails with it. */
  #lost: unknown;
  #closing = false;

  constructor(parts: PostgresStoreParts) {
    this.#options = parts.options;
    this.#writer = parts.writer;
    this.#reader = parts.reader;
    this.#lease = parts.lease;
    this.#mirror = parts.mirror;
    this.#localFailures = parts.localFailures;
    // Renew the lease while idle too; a write transaction renews it as well.
    this.#heartbeat = setInterval(() => this.#renew(), Math.max(10, Math.floor(this.#lease.ttlMs / 3)));
    this.#heartbeat.unref();
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
    return this.#put('messageIds', [messageId, location.topic, location.offset, pack(location)], (m) =>
      m.putMessageLocation(messageId, location),
    );
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
    const batch = this.#batch();
    batch.writes.expire(message, (m) => m.deleteExpiredMessage(message));
    return batch.done;
  }

  // ─── Commit points ──────────────────────────────────────────────────────────────────────────

  committed(): Promise<void> {
    return this.#last.then(
      () => undefined,
      () => undefined,
    );
  }

  async durable(): Promise<void> {
    const failedBefore = this.#failedWrites;
    await this.committed();
    if (this.#failedWrites !== failedBefore) throw new Error('a write in this commit failed');
    // A store that gave up promises nothing any more, even with nothing queued.
    if (this.#lost !== undefined) throw this.#lost;
  }

  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearInterval(this.#heartbeat);
    await this.committed();
    if (this.#lost === undefined) await this.#lease.release(this.#writer).catch(() => {});
    await Promise.allSettled([this.#writer.end({ timeout: 5 }), this.#reader.end({ timeout: 5 })]);
    await this.#mirror.close();
    rmSync(this.#options.cacheDir, { recursive: true, force: true });
  }

  // ─── The write pipeline ─────────────────────────────────────────────────────────────────────

  #put(table: TableName, row: RowValues, mirrorWrite: MirrorWrite): Promise<void> {
    const batch = this.#batch();
    batch.writes.put(table, row, mirrorWrite);
    return batch.done;
  }

  #delete(table: TableName, key: RowValues, mirrorWrite: MirrorWrite): Promise<void> {
    const batch = this.#batch();
    batch.writes.delete(table, key, mirrorWrite);
    return batch.done;
  }

  /** The batch of this turn, opened (and its send planned) by the turn's first write. */
  #batch(): QueuedBatch {
    if (this.#gathering) return this.#gathering;
    // Given up: every write fails at once, all on one failed batch (reported once).
    if (this.#lost !== undefined) {
      this.#refused ??= this.#failedBatch(this.#lost);
      return this.#refused;
    }
    const batch = this.#newBatch();
    this.#gathering = batch;
    this.#last = batch.done;
    this.#planSend();
    return batch;
  }

  #newBatch(): QueuedBatch {
    let resolve!: () => void;
    let reject!: (error: unknown) => void;
    const done = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    // A failure is counted and reported once, in #send; the engine may ignore the promise.
    done.catch(() => {});
    const batch: QueuedBatch = {
      writes: new WriteBatch(),
      done,
      settled: false,
      resolve: () => {
        batch.settled = true;
        resolve();
      },
      reject: (error) => {
        batch.settled = true;
        reject(error);
      },
    };
    return batch;
  }

  #failedBatch(error: unknown): QueuedBatch {
    const batch = this.#newBatch();
    this.#fail(batch, error);
    return batch;
  }

  /**
   * Send the gathered batch at the end of the turn (a `setImmediate`, as lmdb-js does): never
   * from a promise callback, which could split one turn's writes across two transactions.
   */
  #planSend(): void {
    if (this.#startScheduled || this.#inFlight) return;
    this.#startScheduled = true;
    setImmediate(() => {
      this.#startScheduled = false;
      const batch = this.#gathering;
      if (!batch || this.#inFlight) return;
      this.#gathering = undefined;
      this.#inFlight = batch;
      void this.#send(batch).finally(() => {
        this.#inFlight = undefined;
        if (this.#gathering) this.#planSend();
      });
    });
  }

  async #send(batch: QueuedBatch): Promise<void> {
    if (this.#lost !== undefined) return this.#fail(batch, this.#lost);
    const writeRetryMs = this.#options.writeRetryMs ?? 5_000;
    const startedAt = Date.now();
    // Bounded by writeRetryMs: each attempt either commits, is fenced, or waits before the next.
    for (let attempt = 0; ; attempt++) {
      try {
        const sentAt = Date.now();
        await this.#writer.begin((tx) => [this.#lease.fence(tx), ...batch.writes.statements(tx)]);
        this.#renewedAt = sentAt;
        break;
      } catch (error) {
        // The batch is idempotent (upserts and deletes), so a transaction whose fate is unknown
        // (the connection dropped around its COMMIT) may be sent again; later batches wait.
        if (isFenced(error) || Date.now() - startedAt >= writeRetryMs) return this.#loseStore(batch, error);
        await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 25 * 2 ** attempt)));
      }
    }
    batch.writes.applyTo(this.#mirror);
    await this.#mirror.committed();
    // The local copy no longer matches what committed: reads could miss what the engine dropped
    // from memory on this resolve. Safer to stop writing than to serve from it.
    const localFailure = this.#localFailures[0];
    if (localFailure !== undefined) return this.#loseStore(batch, localFailure);
    batch.resolve();
  }

  /** Give up: this batch and every later write fail, since a later commit could refer to what this one lost. */
  #loseStore(batch: QueuedBatch, error: unknown): void {
    this.#giveUp(error);
    this.#fail(batch, error);
  }

  #fail(batch: QueuedBatch, error: unknown): void {
    if (batch.settled) return;
    this.#failedWrites++;
    this.#options.onWriteError?.(error);
    batch.reject(error);
  }

  /**
   * The heartbeat: renew the lease while no transaction does (one query at a time). Fenced, the
   * store is lost. Not renewed for longer than the lease, whether the renewals fail (the database
   * unreachable) or hang (a half-open connection, a lock), it is lost too: a standby may own the
   * store by now, and an idle or stuck broker would otherwise go on serving from memory unaware.
   * A transaction in flight then fails with everything after it; had it committed after all, it
   * did so before any takeover (the fence's row lock), and a send answered with an error is only
   * sent again.
   */
  #renew(): void {
    if (this.#lost !== undefined || this.#closing) return;
    if (Date.now() - this.#renewedAt > this.#lease.ttlMs) {
      const error = new Error('the store lease could not be renewed within its time');
      if (this.#inFlight) this.#loseStore(this.#inFlight, error);
      else this.#giveUp(error);
      return;
    }
    if (this.#inFlight || this.#renewing) return;
    this.#renewing = true;
    const sentAt = Date.now();
    this.#lease
      .fence(this.#writer)
      .then(
        () => {
          this.#renewedAt = Math.max(this.#renewedAt, sentAt);
        },
        (error: unknown) => {
          if (isFenced(error)) this.#giveUp(error);
        },
      )
      .finally(() => {
        this.#renewing = false;
      });
  }

  /** Stop taking writes for good, and say so once. */
  #giveUp(error: unknown): void {
    if (this.#lost !== undefined) return;
    this.#lost = error;
    // Writes gathered behind a transaction that hangs would wait for it: they fail now too.
    const gathering = this.#gathering;
    this.#gathering = undefined;
    if (gathering) this.#fail(gathering, error);
    this.#options.onLost?.(error);
  }
}
