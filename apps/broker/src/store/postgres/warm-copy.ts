import { unpack } from 'msgpackr';
import type { BrokerStore } from '../broker-store.js';
import type { HistoryRecord, StoredMessage } from '../records.js';
import { fromStoredTopic, type StoredTopicV1 } from '../schema/stored-topic.js';
import { arrayLiteral } from './array-literal.js';
import type { Sql, TransactionSql } from './driver.js';
import { FeedArrivals } from './feed-arrivals.js';
import { IdIndexRebuild } from './id-index-rebuild.js';
import { messageOfRow } from './message-rows.js';
import { type Loader, loadersFor, loadRows, selectAll, selectList } from './mirror-load.js';
import { type Column, TABLE_NAMES, TABLES, type TableName } from './postgres-tables.js';
import type { CommittedWrites } from './write-pipeline.js';

/** The tables that grow with retention, followed while standing by. */
const FOLLOWED_TABLES: readonly TableName[] = ['messages', 'history'];

/** The tables {@link WarmCopy.complete} loads whole: what is in flight, and the configuration. */
const OTHER_TABLES = TABLE_NAMES.filter((name) => !FOLLOWED_TABLES.includes(name));

const SNAPSHOT = 'isolation level repeatable read read only';

/**
 * The local copy of a standby, kept close to the database while another broker owns it, so that
 * taking over reads only what changed: the messages and history (the tables that grow with
 * retention, millions of rows) are loaded once and then followed; the other tables (what is in
 * flight: deliveries, the schedule, cursors, configuration) are read whole when it takes over.
 *
 * How it follows the two big tables without a change log:
 * - messages are only appended (at each topic's next offset, in order: one transaction commits at
 *   a time) and deleted by retention, which moves the topic record's `expiredBelow` in the same
 *   transaction and deletes nothing from there on (`RetainedRange`). So it reads, per topic, the
 *   rows from the offset it has not seen, and for the offsets below the new frontier, which of
 *   its own rows the database still holds (the survivors);
 * - a message written again under its key (a DLQ copy marked redriven) takes a number from
 *   `ricochet_row_seq` (`postgres-tables.ts`), so it reads those numbered above the highest it saw;
 * - so does every history row written (inserted, or written again under its key), and rows are
 *   deleted only with their message (the local store's `deleteExpiredMessage` does the same). So
 *   it reads the rows numbered above the highest it saw.
 * Each step reads one repeatable-read snapshot. Its marks are the copy itself (the last offset of
 * each topic it holds) and the highest `seq` read, moved only once the copy committed the step; a
 * failed step is read again, its rows written again (the writes are idempotent).
 *
 * One case differs from a load from scratch: an id stored twice (sent again after the dedup
 * window), whose newer message retention deletes first, is found by id nowhere here, where a load
 * would name the older one. Both are past any dedup window.
 */
export class WarmCopy {
  readonly #mirror: BrokerStore;
  readonly #ids: IdIndexRebuild;
  readonly #loaders: Record<TableName, Loader>;
  /** The highest `seq` of the followed tables the copy has read. */
  #rowSeq = 0;
  #loaded = false;
  /** The step or feed batches in progress: they run one at a time, in the order called. */
  #work: Promise<unknown> = Promise.resolve();
  /**
   * Each topic's next offset as the feed batches the copy committed left it, so that applying a
   * batch does not read its topics' last offsets from the copy (a range read per topic, about a
   * sixth of a standby's work per message). Forgotten when anything else writes the copy: a step
   * from the database, or a commit that failed.
   */
  readonly #fedNextOffsets = new Map<string, number>();
  /** Feed batches arrived and not applied yet, each with its caller's answer, gathered into one commit. */
  readonly #arrivals: FeedArrivals<FeedApplied>;

  /** @param feedApply.delayMs - how long fed batches wait to be applied together (`FEED_APPLY_DELAY_MS`). */
  constructor(mirror: BrokerStore, feedApply: { readonly delayMs?: number } = {}) {
    this.#mirror = mirror;
    this.#ids = new IdIndexRebuild(mirror);
    this.#loaders = loadersFor(this.#ids);
    this.#arrivals = new FeedArrivals({
      queueApply: () => void this.#serially(() => this.#applyArrived()),
      ...feedApply,
    });
  }

  /** Whether the first load is done (then {@link catchUp} reads what changed since). */
  get loaded(): boolean {
    return this.#loaded;
  }

  /**
   * The copy's position: the highest `seq` of the followed tables it holds. Every row numbered up
   * to it is in the copy (one transaction commits at a time, so numbers rise in commit order).
   */
  get rowSeq(): number {
    return this.#rowSeq;
  }

  /**
   * Read what changed since the last step (the whole of the messages and history, the first
   * time): resolves with how many rows of the followed tables it read.
   */
  async catchUp(sql: Sql): Promise<number> {
    return this.#serially(() => sql.begin(SNAPSHOT, (tx) => this.#step(tx)));
  }

  /**
   * Bring the copy level with the database and load the other tables whole, in one snapshot: the
   * copy is then the store. Call once this broker holds the lease, so nothing changes meanwhile.
   */
  async complete(sql: Sql): Promise<void> {
    await this.#serially(() =>
      sql.begin(SNAPSHOT, async (tx) => {
        await this.#step(tx);
        for (const name of OTHER_TABLES) await this.#load(tx, name, selectAll(name), this.#loaders[name]);
      }),
    );
  }

  /**
   * Apply a batch the owner committed (its feed, `standby-feed.ts`), without reading the
   * database, when the copy holds everything before it:
   * - `gap` when it does not (the batch starts past the copy's position, or appends past a topic's
   *   last message): nothing is applied, and a step from the database must bring the copy level;
   * - `held` when the copy read it from the database already (it ends at or before the position);
   * - `applied` otherwise: retention's deletes, the messages (appended at their topic's next
   *   offset, or written again under their key) and the history rows, committed on the copy, whose
   *   position is then the batch's end.
   *
   * A batch commits whole and the position is always a batch's end, so a batch that numbered rows
   * either ends at or before the position or starts at it. One that numbered none (appends and
   * deletes only) starts and ends where it does: its appends are checked one by one, and its
   * deletes are retention's, which delete the same rows whenever they are applied.
   */
  apply(batch: CommittedWrites): Promise<FeedApplied> {
    // The batches that arrive within a few ms, or while the copy is busy, are applied together,
    // in one commit (`feed-arrivals.ts`).
    return new Promise((resolve) => this.#arrivals.add({ batch, resolve }));
  }

  /** Apply every batch arrived so far, in order, then commit them on the copy at once. */
  async #applyArrived(): Promise<void> {
    // Batches arriving from now on queue an apply of their own.
    const arrived = this.#arrivals.take();
    // What the copy holds once what is applied here commits: the position, each topic's next offset.
    const held = { rowSeq: this.#rowSeq, nextOffsets: new Map<string, number>() };
    let results: FeedApplied[];
    try {
      results = arrived.map(({ batch }) => this.#applyOne(batch, held));
      await this.#mirror.committed();
      this.#ids.committed();
      this.#rowSeq = held.rowSeq;
      for (const [topic, offset] of held.nextOffsets) this.#fedNextOffsets.set(topic, offset);
    } catch {
      // Not on the copy: a step reads the same rows from the database, from the position before.
      this.#fedNextOffsets.clear();
      results = arrived.map(() => 'gap');
    }
    for (const [index, { resolve }] of arrived.entries()) resolve(results[index] as FeedApplied);
  }

  /** Apply `batch` on top of `held` (not committed yet), or say why not; `held` moves with it. */
  #applyOne(batch: CommittedWrites, held: HeldByCopy): FeedApplied {
    if (!this.#loaded || batch.from > held.rowSeq) return 'gap';
    const numbered = batch.to > batch.from;
    if (numbered && batch.to <= held.rowSeq) return 'held';
    if (numbered && batch.from !== held.rowSeq) return 'gap';
    const messages = batch.messages.map(messageOfRow);
    const appended = this.#appendsOf(messages, held.nextOffsets);
    if (appended === undefined) return 'gap';
    for (const expired of batch.expired) void this.#mirror.deleteExpiredMessage(expired);
    for (const message of messages) {
      if (appended.has(message)) {
        this.#ids.add(message);
        void this.#mirror.appendMessage(message);
      } else if (numbered) {
        // Written again under its key (a DLQ copy marked redriven): the index entry stays.
        void this.#mirror.appendMessage(message);
      }
    }
    for (const [messageId, value] of batch.history) {
      void this.#mirror.appendHistory(messageId, unpack(value) as HistoryRecord & { readonly lease: number });
    }
    held.rowSeq = Math.max(held.rowSeq, batch.to);
    return 'applied';
  }

  /**
   * The messages of a batch the copy does not hold yet, each at its topic's next offset (after
   * what the batches applied with it appended, `nextOffsets`, which it moves on); the others it
   * holds (at or below the topic's last offset). `undefined` when one comes past the next offset:
   * a batch before it was missed.
   */
  #appendsOf(
    messages: readonly StoredMessage[],
    nextOffsets: Map<string, number>,
  ): Set<StoredMessage> | undefined {
    const sorted = [...messages].sort((a, b) =>
      a.topic === b.topic ? a.offset - b.offset : a.topic < b.topic ? -1 : 1,
    );
    const next = new Map<string, number>();
    const appended = new Set<StoredMessage>();
    for (const message of sorted) {
      const { topic } = message;
      const expected =
        next.get(topic) ??
        nextOffsets.get(topic) ??
        this.#fedNextOffsets.get(topic) ??
        (this.#mirror.lastOffset(topic) ?? -1) + 1;
      if (message.offset > expected) return undefined;
      if (message.offset === expected) {
        appended.add(message);
        next.set(topic, expected + 1);
      } else next.set(topic, expected);
    }
    // Only once the whole batch is known to apply: a gap leaves `nextOffsets` as it was.
    for (const [topic, offset] of next) nextOffsets.set(topic, offset);
    return appended;
  }

  /**
   * Resolves once the step or batches called so far are done, the batches waiting to be applied
   * together included: the copy may then be closed, or completed.
   */
  async settled(): Promise<void> {
    this.#arrivals.flush();
    await this.#work;
  }

  /** Run `work` after the step or batch in progress, and before any called later. */
  #serially<T>(work: () => Promise<T>): Promise<T> {
    const done = this.#work.then(work);
    this.#work = done.catch(() => undefined);
    return done;
  }

  async #step(tx: TransactionSql): Promise<number> {
    // The step appends from the database: the copy's last offsets are read again from it.
    this.#fedNextOffsets.clear();
    const frontiers = await readFrontiers(tx);
    const [row] = await tx<{ seq: string | null }[]>`
      select greatest((select max(seq) from ricochet_history), (select max(seq) from ricochet_messages))::text as seq`;
    const rowSeq = row?.seq == null ? this.#rowSeq : Number(row.seq);
    if (!this.#loaded) {
      const rows =
        (await this.#load(tx, 'messages', selectAll('messages'), this.#loaders.messages)) +
        (await this.#load(tx, 'history', selectAll('history'), this.#loaders.history));
      this.#rowSeq = Math.max(this.#rowSeq, rowSeq);
      this.#loaded = true;
      return rows;
    }
    await this.#deleteExpired(tx, frontiers);
    const rows =
      (await this.#load(tx, 'messages', this.#appendedMessages(frontiers), this.#loaders.messages)) +
      // Rewritten in place: the index entry stays as the message was first loaded.
      (await this.#load(tx, 'messages', this.#writtenSince('messages'), (mirror, written) =>
        mirror.appendMessage(messageOfRow(written.value)),
      )) +
      (await this.#load(tx, 'history', this.#writtenSince('history'), this.#loaders.history));
    this.#rowSeq = Math.max(this.#rowSeq, rowSeq);
    return rows;
  }

  /** The rows of `name` written (or written again) since the copy last read it. */
  #writtenSince(name: TableName): string {
    const table = TABLES[name];
    return `select ${selectList(table)} from ${table.name} where seq > ${this.#rowSeq}`;
  }

  /** Load the rows `select` gives into the copy, committed: how many there were. */
  async #load(tx: TransactionSql, name: TableName, select: string, load: Loader): Promise<number> {
    const rows = await loadRows(tx, TABLES[name], select, load, this.#mirror, this.#ids);
    await this.#mirror.committed();
    this.#ids.committed();
    return rows;
  }

  /**
   * The messages past the last one the copy holds of each topic (from 0 for a topic new to it), in
   * key order. The copy's own last offset is the mark: it committed every row read before.
   */
  #appendedMessages(frontiers: ReadonlyMap<string, number>): string {
    const marks = [...frontiers.keys()].map(
      (topic) => [topic, (this.#mirror.lastOffset(topic) ?? -1) + 1] as const,
    );
    const table = TABLES.messages;
    return `select ${selectList(table)} from ${table.name} m
      join unnest(${marksLiteral(marks)}) as w(mark_topic, mark_next) on m.topic = w.mark_topic and m.msg_offset >= w.mark_next
      order by m.topic, m.msg_offset`;
  }

  /**
   * Delete from the copy the messages retention deleted: those below a topic's new frontier that
   * the database no longer holds. Only topics whose frontier moved, or where the copy still holds
   * a message below it (a survivor, which may have gone since), are looked at.
   */
  async #deleteExpired(tx: TransactionSql, frontiers: ReadonlyMap<string, number>): Promise<void> {
    const looked: (readonly [string, number])[] = [];
    for (const [topic, expiredBelow] of frontiers) {
      const first = this.#mirror.readMessages(topic, 0, 1)[0];
      if (first !== undefined && first.offset < expiredBelow) looked.push([topic, expiredBelow]);
    }
    if (looked.length === 0) return;
    const kept = await tx.unsafe<{ topic: string; msg_offset: string }[]>(
      `select m.topic, m.msg_offset from ${TABLES.messages.name} m
        join unnest(${marksLiteral(looked)}) as w(mark_topic, mark_below) on m.topic = w.mark_topic and m.msg_offset < w.mark_below`,
    );
    const survivors = new Set(kept.map((row) => `${row.topic}\u0000${row.msg_offset}`));
    for (const [topic, expiredBelow] of looked) {
      // Bounded by the copy: each page is read from past the last offset of the one before.
      for (let from = 0; from < expiredBelow; ) {
        const page = this.#mirror.readMessages(topic, from, 1_000);
        for (const message of page) {
          if (message.offset >= expiredBelow) break;
          if (!survivors.has(`${topic}\u0000${message.offset}`)) {
            void this.#mirror.deleteExpiredMessage({
              topic,
              offset: message.offset,
              messageId: message.messageId,
            });
          }
        }
        const last = page.at(-1);
        if (last === undefined || page.length < 1_000) break;
        from = last.offset + 1;
      }
    }
    await this.#mirror.committed();
  }
}

/** What the copy holds once the feed batches being applied commit (see `WarmCopy.#applyArrived`). */
interface HeldByCopy {
  rowSeq: number;
  /** Per topic the batches appended to, the offset the next append must have. */
  readonly nextOffsets: Map<string, number>;
}

/** What {@link WarmCopy.apply} did with a batch of the owner's feed. */
export type FeedApplied = 'applied' | 'held' | 'gap';

/** Every topic of the database, with its retained range's frontier. */
async function readFrontiers(tx: TransactionSql): Promise<Map<string, number>> {
  const rows = await tx<{ name: string; value: Uint8Array }[]>`select name, value from ricochet_topics`;
  const frontiers = new Map<string, number>();
  for (const row of rows) {
    const record = fromStoredTopic(unpack(row.value) as StoredTopicV1);
    frontiers.set(row.name, record.expiredBelow ?? 0);
  }
  return frontiers;
}

const MARK_COLUMNS: readonly [Column, Column] = [
  { name: 'topic', type: 'text' },
  { name: 'offset', type: 'bigint' },
];

/** `(topic, offset)` pairs as two array literals inlined in SQL, for `unnest`: COPY takes no parameters. */
function marksLiteral(marks: readonly (readonly [string, number])[]): string {
  const rows = marks.map(([topic, offset]) => [topic, offset]);
  const [topic, offset] = MARK_COLUMNS;
  return `${sqlString(arrayLiteral(topic, rows, 0))}::text[], ${sqlString(arrayLiteral(offset, rows, 1))}::bigint[]`;
}

/** A string literal (standard conforming: only `'` is doubled). */
function sqlString(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
