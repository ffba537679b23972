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

/**
 * The broker's durable state: the interface the engine speaks, implemented by the embedded LMDB
 * store and by the PostgreSQL store (`postgres/`, see "The store seam" in docs/architecture.md).
 * It speaks the engine's record types; how they are laid out is the backend's business (LMDB:
 * `lmdb-store.ts` and `schema/`; PostgreSQL: `postgres/postgres-tables.ts`, same stored shapes).
 *
 * **Reads are synchronous, writes are queued.** A write method queues its write and returns at
 * once; the engine rarely awaits the promise it returns, and waits for {@link durable} instead.
 * What a backend must guarantee, and what the engine relies on:
 *
 * 1. *Queue order.* Writes are applied in the order they were called, whatever their kind; the
 *    last write to a key wins. Puts replace, deletes of a missing key do nothing.
 * 2. *One event turn, one transaction.* Every write queued in one turn of the event loop commits
 *    in one transaction, all or nothing. A transaction may hold several turns' writes, but never
 *    part of one turn's. The engine counts on it wherever writes belong together: a send batch's
 *    messages and their id index; delivery states written behind together with the group cursors
 *    that pass them; a failure's WaitingRetry state with its schedule entry and history entry.
 * 3. *Commits in queue order.* A transaction never becomes visible or durable before an earlier
 *    one. With (2) this is the crash-safety invariant of docs/semantics.md, "nothing stored refers
 *    past the stored log": a message's append is queued before anything can refer to it (a cursor,
 *    a delivery state, a history entry, a counter), so a crash loses a suffix of the queue and
 *    never a message something stored names.
 * 4. *Visibility.* Reads see committed transactions only, except {@link getDelivery}, which also
 *    sees this process's queued puts and deletes of delivery records (read-your-writes). The
 *    engine covers its other reads of its own recent writes itself: the newest messages of each
 *    topic, and its own schedule writes, stay in its memory until they commit.
 * 5. *Write promises.* A write's promise resolves once its transaction has committed (is visible
 *    to reads) and rejects if that transaction failed; the backend must not let an ignored
 *    rejection go unhandled. All writes of one transaction may share one promise object; the
 *    engine uses promise identity only to batch its own bookkeeping.
 * 6. *One writer.* Only the engine of the broker that opened the store writes to it. (A shared
 *    backend keeps this per queue: each topic queue has one owning broker at a time, fenced by the
 *    epoch of its lease, DESIGN.md §9.)
 *
 * The sync reads split in two. Some are called only while the engine starts (the `list…`
 * methods, {@link lastOffset}, {@link scanDeliveries}, {@link getSchedule},
 * {@link listScheduleGroups}); the others run on hot paths ({@link getDelivery}, the message reads,
 * {@link locateMessage}, the schedule scans) or for the admin API ({@link readHistory}). A
 * backend whose data lives elsewhere answers both from a local copy of what committed (the
 * PostgreSQL store keeps an LMDB scratch copy, updated after each commit).
 */
export interface BrokerStore {
  // ─── Topics and groups: metadata, read once at start, written by the admin API ──────────────

  /** Every topic, by name. At start only. */
  listTopics(): TopicRecord[];
  /** Create or replace a topic's record (its config); its messages stay. */
  putTopic(record: TopicRecord): Promise<void>;

  /** Every group, by name. At start only. */
  listGroups(): GroupRecord[];
  /** Create or replace a group's record (its config). */
  putGroup(record: GroupRecord): Promise<void>;

  /**
   * Every group cursor. At start only. A cursor is written behind (never ahead of the delivery
   * states of the messages it passes, by rule 2), so after a crash it may lag: the engine then
   * looks in the delivery history for the messages between it and the log's end.
   */
  listCursors(): CursorRecord[];
  /** Replace a group's cursor on a topic. */
  putCursor(record: CursorRecord): Promise<void>;
  /** Every group's durable counters. At start only. */
  listGroupCounters(): GroupCounters[];
  /** Replace a group's counters; queued in the turn that changed them, with the writes that changed them. */
  putGroupCounters(record: GroupCounters): Promise<void>;
  /** Every instance of every broadcasting group (B1). At start only. */
  listBroadcastInstances(): BroadcastInstanceRecord[];
  /** Create or replace a broadcasting group's instance (its positions and when it was last seen). */
  putBroadcastInstance(record: BroadcastInstanceRecord): Promise<void>;
  /** Forget an instance unseen for its group's TTL. */
  deleteBroadcastInstance(group: string, clientId: string): Promise<void>;

  // ─── The log: messages by topic and offset, and the message-id index ────────────────────────

  /**
   * The highest offset stored in a topic, or `undefined` for an empty topic. At start only: the
   * engine hands out the next offsets itself, in memory, and offsets a crash lost are handed out
   * again (semantics.md, R1).
   */
  lastOffset(topic: string): number | undefined;
  /**
   * Store a message at its topic and offset, replacing one already there (the engine rewrites a
   * DLQ copy to mark it redriven, D2). Queued in the same turn the message got its offset, before
   * any consumer saw it: rules 2 and 3 make it commit before anything that refers to it.
   */
  appendMessage(message: StoredMessage): Promise<void>;
  /**
   * Up to `limit` committed messages of a topic from `fromOffset` on, in offset order. Hot when a
   * group works through a backlog: the newest messages of a topic the engine serves from memory.
   */
  readMessages(topic: string, fromOffset: number, limit: number): StoredMessage[];
  /** One committed message. Hot on settling and on due retries when the message is not among the newest. */
  getMessage(topic: string, offset: number): StoredMessage | undefined;
  /**
   * Where a committed message id lives. Read for dedup within the window (R3) when the send path's
   * filter of recent ids cannot rule the id out, and by the admin API.
   */
  locateMessage(messageId: string): MessageLocation | undefined;
  /** Index a message by id; queued with its append. */
  putMessageLocation(messageId: string, location: MessageLocation): Promise<void>;

  // ─── Deliveries: one message's lifecycle state for one group ────────────────────────────────

  /**
   * A message's delivery record for a group, pending writes of this process included (rule 4):
   * the engine reads a record right after queuing it, e.g. to settle a lease it just granted.
   * Hot: every lease, settle and due event reads one.
   */
  getDelivery(address: DeliveryAddress): DeliveryRecord | undefined;
  /**
   * Whether {@link getDelivery} would find a record, without decoding it: the engine asks before
   * it keeps a changed state in write-behind memory, to know whether a stored one must go later.
   */
  hasDelivery(address: DeliveryAddress): boolean;
  /** Create or replace a delivery record. */
  putDelivery(address: DeliveryAddress, record: DeliveryRecord): Promise<void>;
  /** Remove a delivery record: the message reached Commit or DLQ for the group. */
  deleteDelivery(address: DeliveryAddress): Promise<void>;
  /** Every committed delivery record, for rebuilding the engine's view at start. At start only. */
  scanDeliveries(): Iterable<{ readonly address: DeliveryAddress; readonly record: DeliveryRecord }>;

  // ─── The schedule: retries, lease deadlines and delays, ordered by due time per group ───────

  /** Schedule an entry. The engine keeps its own uncommitted schedule writes and merges them into its reads. */
  putSchedule(key: ScheduleKey, entry: ScheduleEntry): Promise<void>;
  /** One committed schedule entry, if it exists. At start only (recovery). */
  getSchedule(key: ScheduleKey): ScheduleEntry | undefined;
  /** Remove an entry: it was taken, or its delivery was settled first. */
  deleteSchedule(key: ScheduleKey): Promise<void>;
  /** The groups that have committed schedule entries. At start only. */
  listScheduleGroups(): string[];
  /** The earliest committed entry of a group. (The engine does not use it today.) */
  firstSchedule(group: string): ScheduleKey | undefined;
  /**
   * The first `limit` committed keys of a group, earliest first; only those after `after` if
   * given. Read on each scheduler pass to find a group's next due time.
   */
  scheduleKeys(group: string, limit: number, after?: ScheduleKey): ScheduleKey[];
  /**
   * Committed entries of a group due at or before `nowMs`, earliest first; only those after
   * `after` if given. Read on each scheduler pass: a range scan, never a scan of the schedule.
   */
  readDueSchedule(
    group: string,
    nowMs: number,
    limit: number,
    after?: ScheduleKey,
  ): { readonly key: ScheduleKey; readonly entry: ScheduleEntry }[];
  /** How many entries a group has scheduled (a range count; for stats, not hot paths; unused by the engine today). */
  countSchedule(group: string): number;

  // ─── History: how each delivery ended ───────────────────────────────────────────────────────

  /**
   * Record how one delivery ended. A delivery is identified by its lease number, unique per group
   * (per instance, in a broadcasting group); writing the same delivery again replaces it.
   */
  appendHistory(messageId: string, record: HistoryRecord & { readonly lease: number }): Promise<void>;
  /**
   * Every committed delivery of a message, grouped by group, in lease order. Read by the admin
   * API's message view (after {@link committed}) and, for messages stored before a restart, by
   * the log scans (clustering and broadcasting) to tell a message already settled from one whose
   * delivery a crash lost.
   */
  readHistory(messageId: string): HistoryRecord[];

  // ─── Retention (DESIGN.md §5) ───────────────────────────────────────────────────────────────

  /**
   * Delete an expired message and everything stored about it: the message at its topic and
   * offset, its id-index entry when that entry (as committed) names this message — a DLQ copy
   * shares its origin's id and is not indexed — and the history entries of its deliveries on this
   * topic and offset. A queued write like any other (rules 1–3): a retention batch's deletions and
   * the topic record with its new retained range (`firstOffset`, `expiredBelow`) are queued in one
   * turn and commit together.
   *
   * The engine keeps the rules that make this safe, and the store does not check them:
   * - it deletes only messages no group holds: no delivery record names the message (leased,
   *   Inflight, WaitingRetry, Ready again, parked behind a FIFO head), no broadcast instance holds
   *   it, and a delay message is not yet due — so there is never a delivery record or schedule
   *   entry to delete with it, and the effect applier stays the only writer of those;
   * - it moves every cursor below the deleted range past it in the same turn, and stops reading
   *   deleted offsets at once (the topic's retained range, written with the deletions in the topic
   *   record), so nothing stored or in memory refers to a deleted message;
   * - it never deletes a message whose id has an index write queued and not yet committed (a send
   *   of the same id, after the dedup window), which the committed read here could not see.
   */
  deleteExpiredMessage(message: ExpiredMessage): Promise<void>;
  /**
   * Bytes the stored data takes up now: pages in use, committed, free pages not counted (LMDB
   * reuses them, so the data file does not shrink, but it stops growing). Cheap: a few counters.
   * Read once a second for `--max-store-bytes`.
   */
  storedBytes(): number;

  // ─── Commit points ──────────────────────────────────────────────────────────────────────────

  /** Resolves when every write queued before the call is visible to reads. */
  committed(): Promise<void>;
  /**
   * Resolves when every write queued before the call is durable under the flush policy (`fsync`:
   * on disk; `commit`: committed); rejects if one of them failed. Every answer that promises
   * durability waits for it: a send's receipt (R1), a settle, a change of invisibility.
   */
  durable(): Promise<void>;
  /** Wait for every queued write to be durable, then release the store. */
  close(): Promise<void>;
}
