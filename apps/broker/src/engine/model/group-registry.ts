import {
  type Clock,
  type DeliveryHistoryMode,
  FifoGate,
  type GroupConfigInput,
  type GroupPauseState,
  initialGroupPauseState,
  resolveGroupConfig,
  restoreGroupPauseState,
  storedGroupPause,
} from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';
import type { BrokerStore } from '../../store/broker-store.js';
import type { CursorRecord, GroupRecord } from '../../store/records.js';
import { NameOrder, type NamePage } from './name-order.js';
import { OffsetRuns } from './offset-runs.js';
import { ReadyQueue } from './ready-queue.js';
import type { TopicRuntime } from './topic-registry.js';

/** What the engine holds in memory per group: bounded by design, whatever the backlog. */
export class GroupRuntime {
  readonly name: string;
  record: GroupRecord;
  /** Per topic, the next offset to dispatch: every offset below has been handed out (or filtered). */
  readonly cursors = new Map<string, number>();
  /** Per topic, the cursor the store holds (or will, once the writes queued so far commit). */
  readonly storedCursors = new Map<string, number>();
  /**
   * Per topic, the successes at or past its stored cursor that the group keeps no history entry
   * of (`history: 'failures'`): written with the stored cursor, so that after a crash the log scan
   * from that cursor knows them as settled, as a history entry would tell it (docs/semantics.md C2).
   * Each flush that moves the stored cursor drops those it passed: a window of about 100 ms.
   */
  readonly settledMarks = new Map<string, OffsetRuns>();
  /** Messages that are Ready again, waiting for a consumer; capped, the rest wait on disk. */
  readonly readyQueue = new ReadyQueue();
  /** Messages leased to a consumer right now. */
  inflight = 0;
  /** Messages waiting for their retry delay. */
  waitingRetry = 0;
  committed = 0;
  deadLettered = 0;
  redriven = 0;
  /** P5: for FIFO groups, the one message per (topic, message group) that may be delivered now. */
  readonly fifoGate = new FifoGate();
  /** The failure-storm breaker and the manual pause (DESIGN.md §11); moved by the effect applier only. */
  pause: GroupPauseState = initialGroupPauseState();
  /** Called when the group may have new Ready messages (wakes long polls and push dispatch). */
  readonly #wakeListeners = new Set<() => void>();

  constructor(record: GroupRecord) {
    this.name = record.name;
    this.record = record;
  }

  get config() {
    return this.record.config;
  }

  /** Messages in the group's topics after its cursors: never dispatched yet (tag filters aside). */
  undispatched(topics: (name: string) => TopicRuntime | undefined): number {
    let count = 0;
    for (const [topic, cursor] of this.cursors)
      count += Math.max(0, (topics(topic)?.nextOffset ?? cursor) - cursor);
    return count;
  }

  onWake(listener: () => void): () => void {
    this.#wakeListeners.add(listener);
    return () => this.#wakeListeners.delete(listener);
  }

  wake(): void {
    for (const listener of [...this.#wakeListeners]) listener();
  }
}

/** The readers of a topic no group reads. */
const NO_READERS: ReadonlySet<GroupRuntime> = new Set();

/** Groups: their config, created over the admin API or on first use. */
export class GroupRegistry {
  readonly #groups = new Map<string, GroupRuntime>();
  readonly #byName = new NameOrder<GroupRuntime>();
  readonly #store: BrokerStore;
  readonly #clock: Clock;
  readonly #autoCreate: boolean;
  readonly #defaultHistory: DeliveryHistoryMode;
  /**
   * Per topic, the groups that read it: with a cursor of their own, or of one of their broadcast
   * instances (B1). What a send asks, once per turn, instead of walking every group of the broker:
   * with tens of thousands of groups that walk, and the copy of the list it made, cost every send
   * milliseconds. It never shrinks (nothing removes a group or a cursor), and a reader that went
   * away (a forgotten broadcast instance) only costs a look at it per append.
   */
  readonly #readers = new Map<string, Set<GroupRuntime>>();
  /**
   * The groups whose failure-storm rule is on (`pauseOnFailures`), kept as configs change, so that
   * what is shared between a spread group's queues every 250 ms (`cluster/routing/storm-counts.ts`)
   * costs what those groups do, not every group of the broker.
   */
  readonly #stormRuled = new Set<GroupRuntime>();
  /** Groups and topics whose marks changed this turn: their cursor records go with the turn's commit. */
  readonly #marksToWrite = new Map<string, { readonly group: GroupRuntime; readonly topic: string }>();

  constructor(
    store: BrokerStore,
    clock: Clock,
    autoCreate: boolean,
    defaultHistory: DeliveryHistoryMode = 'failures',
  ) {
    this.#store = store;
    this.#clock = clock;
    this.#autoCreate = autoCreate;
    this.#defaultHistory = defaultHistory;
  }

  /** Load groups, their cursors and their durable counters. */
  load(): void {
    for (const record of this.#store.listGroups()) {
      // Configs stored by an older broker lack newer fields: they take their defaults.
      const config = resolveGroupConfig(record.config);
      const group = new GroupRuntime({ ...record, config });
      // An open breaker stays open across a restart; a half-open one probes again (DESIGN.md §11).
      group.pause = restoreGroupPauseState(record.pause, this.#clock.now());
      this.#add(group);
    }
    for (const cursor of this.#store.listCursors()) {
      const group = this.#groups.get(cursor.group);
      if (!group) continue;
      group.cursors.set(cursor.topic, cursor.nextOffset);
      this.addReader(group, cursor.topic);
      group.storedCursors.set(cursor.topic, cursor.nextOffset);
      if (cursor.settledAhead !== undefined)
        group.settledMarks.set(cursor.topic, OffsetRuns.fromFlat(cursor.settledAhead));
    }
    for (const counters of this.#store.listGroupCounters()) {
      const group = this.#groups.get(counters.group);
      if (!group) continue;
      group.committed = counters.committed;
      group.deadLettered = counters.deadLettered;
      group.redriven = counters.redriven ?? 0;
    }
  }

  get(name: string): GroupRuntime | undefined {
    return this.#groups.get(name);
  }

  list(): GroupRuntime[] {
    return [...this.#groups.values()];
  }

  /** Up to `limit` groups named after `afterName` (from the first when `undefined`), by name. */
  page(afterName: string | undefined, limit: number): NamePage<GroupRuntime> {
    return this.#byName.page(afterName, limit);
  }

  /** The groups whose failure-storm rule is on (DESIGN.md §11). */
  withStormRule(): ReadonlySet<GroupRuntime> {
    return this.#stormRuled;
  }

  #add(group: GroupRuntime): GroupRuntime {
    this.#groups.set(group.name, group);
    this.#byName.add(group);
    this.#indexStormRule(group);
    return group;
  }

  #indexStormRule(group: GroupRuntime): void {
    if (group.config.pauseOnFailures === undefined) this.#stormRuled.delete(group);
    else this.#stormRuled.add(group);
  }

  /** `group` reads `topic` from now on: it has a cursor there, or one of its broadcast instances has. */
  addReader(group: GroupRuntime, topic: string): void {
    let readers = this.#readers.get(topic);
    if (!readers) {
      readers = new Set();
      this.#readers.set(topic, readers);
    }
    readers.add(group);
  }

  /** The groups that read `topic` (see {@link addReader}); perhaps one that has stopped. */
  readersOf(topic: string): ReadonlySet<GroupRuntime> {
    return this.#readers.get(topic) ?? NO_READERS;
  }

  /**
   * The group a consumer names, created with default config when auto-creation is on.
   * @throws BrokerError NOT_FOUND when it does not exist and may not be created.
   */
  require(name: string): GroupRuntime {
    const existing = this.#groups.get(name);
    if (existing) return existing;
    if (!this.#autoCreate)
      throw BrokerError.of('NOT_FOUND', `group "${name}" does not exist`, { group: name });
    return this.put(name, {});
  }

  /** Create a group or replace its config; fields left out take their defaults (DESIGN.md §2). */
  put(name: string, input: GroupConfigInput): GroupRuntime {
    const existing = this.#groups.get(name);
    const record: GroupRecord = {
      name,
      config: resolveGroupConfig(input),
      createdAt: existing?.record.createdAt ?? this.#clock.now(),
      ...(existing?.record.pause === undefined ? {} : { pause: existing.record.pause }),
    };
    void this.#store.putGroup(record);
    if (existing) {
      existing.record = record;
      this.#indexStormRule(existing);
      return existing;
    }
    return this.#add(new GroupRuntime(record));
  }

  /** Persist a group's pause state with its record, so a paused or open group stays so after a restart. */
  savePause(group: GroupRuntime): void {
    group.record = { ...group.record, pause: storedGroupPause(group.pause) };
    void this.#store.putGroup(group.record);
  }

  /** Which ended deliveries `group`'s history keeps: its own setting, else the broker's. */
  historyOf(group: GroupRuntime): DeliveryHistoryMode {
    return group.config.history ?? this.#defaultHistory;
  }

  /**
   * Persist a group's cursor on a topic: where it stands now, or `nextOffset`, where it stood when
   * a write-behind flush began. The marks it passes are dropped; the rest go with it.
   */
  saveCursor(group: GroupRuntime, topic: string, nextOffset = group.cursors.get(topic)): void {
    if (nextOffset === undefined) return;
    const marks = group.settledMarks.get(topic);
    marks?.dropBelow(nextOffset);
    group.storedCursors.set(topic, nextOffset);
    void this.#store.putCursor(cursorRecordOf(group, topic, nextOffset, marks));
  }

  /**
   * A success of `group` at `offset` that its history will not record: marked, when its stored
   * cursor has not passed it yet, and written with that cursor at the end of the turn
   * ({@link writeMarks}). Returns false when the group has no stored cursor on the topic to mark
   * it with: its history entry must say it instead.
   */
  markSucceeded(group: GroupRuntime, topic: string, offset: number): boolean {
    return this.markSucceededRuns(group, topic, [offset, offset + 1]);
  }

  /**
   * {@link markSucceeded} for a run of acks at once: `runs` is `[start, end, …]` (`end`
   * exclusive), as core's run decision gives its committed offsets. The topic's marks are written
   * once, with its stored cursor, at the end of the turn. Returns false when the group has no
   * stored cursor on the topic.
   */
  markSucceededRuns(group: GroupRuntime, topic: string, runs: readonly number[]): boolean {
    const stored = group.storedCursors.get(topic);
    if (stored === undefined) return false;
    let marks = group.settledMarks.get(topic);
    for (let i = 0; i + 1 < runs.length; i += 2) {
      // Below its stored cursor the log scan does not come again: nothing to mark there.
      const start = Math.max(runs[i] as number, stored);
      const end = runs[i + 1] as number;
      if (start >= end) continue;
      if (!marks) {
        marks = new OffsetRuns();
        group.settledMarks.set(topic, marks);
      }
      marks.addRun(start, end);
      this.#marksToWrite.set(`${group.name}\u0000${topic}`, { group, topic });
    }
    return true;
  }

  /** Whether `group` has a stored cursor on `topic`, so that a success there may be a mark. */
  canMark(group: GroupRuntime, topic: string): boolean {
    return group.storedCursors.has(topic);
  }

  /** Whether `group` succeeded at `offset` past its stored cursor (a mark: no history entry). */
  isMarkedSucceeded(group: GroupRuntime, topic: string, offset: number): boolean {
    return group.settledMarks.get(topic)?.has(offset) ?? false;
  }

  /**
   * Queue the writes of the marks this turn added, each with its topic's stored cursor (not the
   * cursor in memory: that may pass deliveries whose records are still to be written). Called
   * once per turn, before a settle awaits durability, so its answer waits for them too.
   */
  writeMarks(): void {
    for (const { group, topic } of this.#marksToWrite.values()) {
      const stored = group.storedCursors.get(topic);
      if (stored !== undefined)
        void this.#store.putCursor(cursorRecordOf(group, topic, stored, group.settledMarks.get(topic)));
    }
    this.#marksToWrite.clear();
  }

  /** Persist a group's counters. */
  saveCounters(group: GroupRuntime): void {
    void this.#store.putGroupCounters({
      group: group.name,
      committed: group.committed,
      deadLettered: group.deadLettered,
      redriven: group.redriven,
    });
  }
}

function cursorRecordOf(
  group: GroupRuntime,
  topic: string,
  nextOffset: number,
  marks: OffsetRuns | undefined,
): CursorRecord {
  return marks === undefined || marks.isEmpty
    ? { group: group.name, topic, nextOffset }
    : { group: group.name, topic, nextOffset, settledAhead: marks.toFlat() };
}
