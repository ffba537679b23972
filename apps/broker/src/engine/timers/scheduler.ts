import type { Clock } from '@ricochet/core';
import type { BrokerStore } from '../../store/broker-store.js';
import type { ScheduleEntry, ScheduleKey } from '../../store/records.js';
import { compareKeys, KeptEntries, KeptEntry } from './kept-entries.js';
import { CATCH_UP_TURN_BUDGET_MS, realWorkClock, TURN_BUDGET_MS } from './loop-budget.js';
import { soon, type TimerHandle, type TimerService } from './timer-service.js';
import { UncommittedWrites } from './uncommitted-writes.js';

/** One due entry handed to the engine. */
export interface DueEntry {
  readonly key: ScheduleKey;
  readonly entry: ScheduleEntry;
}

/**
 * Processes a batch of one group's due entries, earliest first, and returns how many it took.
 * Taking fewer than offered means the group has no room right now (its ready queue is full); the
 * rest stay in the store until {@link Scheduler.resume} is called for the group.
 */
export type DueHandler = (group: string, due: readonly DueEntry[]) => number;

export interface SchedulerOptions {
  readonly store: BrokerStore;
  readonly clock: Clock;
  readonly timers: TimerService;
  /** Entries handed to `onDue` at a time. @default 64 */
  readonly batchSize?: number;
  /** Called when a pass fails; the scheduler tries again on its next wake-up. */
  readonly onError?: (error: unknown) => void;
  /**
   * What a pass's time budget is measured on, in ms: how long it has held the event loop, not the
   * schedule's clock. @default realWorkClock
   */
  readonly workClock?: () => number;
  /** `recoverable` entries kept in memory at most. @default KEPT_ENTRIES */
  readonly maxKeptEntries?: number;
}

/**
 * `now`: the entry is written with this turn's commit. `deferred`: it stays in memory until the
 * next write-behind flush writes it ({@link Scheduler.writeDeferred}), and an entry removed before
 * that never reaches the store. `recoverable`: the record written at once with the entry names it
 * (its `scheduleKey`), and recovery schedules again a record due within
 * {@link RECOVERABLE_HORIZON_MS} whose entry the store lacks; so an entry due within that horizon
 * is kept in memory and never written, and a later one is written `now`.
 */
export type ScheduleDurability = 'now' | 'deferred' | 'recoverable';

/**
 * How far ahead a `recoverable` entry may be due and still be kept in memory only, in ms. Recovery
 * looks up the stored entry of every WaitingRetry due within this much of the restart (a missing
 * one was kept in memory, or was taken before the crash), so it bounds the reads a restart makes
 * besides its one scan of the records: ten seconds of retries. It covers the default push
 * schedule's first retry (10 s) and every millisecond-scale policy.
 */
export const RECOVERABLE_HORIZON_MS = 10_000;

/**
 * How many `recoverable` entries a scheduler keeps in memory at most (about 215 bytes each, so
 * 14 MB in all, measured); past it they are written `now`, as every entry was before, so a failure
 * storm costs disk, not heap.
 */
export const KEPT_ENTRIES = 65_536;

/**
 * A pass holds the loop up to {@link TURN_BUDGET_MS} (at least one batch runs, so a long backlog
 * always moves); one that finds entries due this long ago, in ms, is catching up (an overloaded
 * broker, a restart after downtime) and may take {@link CATCH_UP_TURN_BUDGET_MS}.
 */
const LATE_MS = 10;
/** Batches per pass at most, whatever the time (a manual clock in tests does not move). */
const MAX_ROUNDS_PER_PASS = 16;
/** Keys read at a time while looking past this process's pending writes. */
const PAGE_KEYS = 16;

/**
 * Retries, lease deadlines and delays live in the store's time-ordered schedule; this class keeps
 * one number per group in memory (its earliest due time) and one timer for all of them, so a
 * million pending retries cost disk, not heap or timers. The exception is bounded: a retry due
 * within seconds, whose record recovery would schedule again (`recoverable`), is kept in memory
 * up to {@link KEPT_ENTRIES} and never written, so a nack costs one durable write (its record)
 * and its retry falling due costs none.
 *
 * Passes are synchronous: the store's reads see committed data only, so the scheduler keeps its
 * own writes that have not committed yet (additions and removals, bounded by the store's write
 * latency) and merges them into every read. A due entry therefore fires on time even when the
 * store is busy committing, instead of waiting for the commit queue to drain.
 */
export class Scheduler {
  readonly #store: BrokerStore;
  readonly #clock: Clock;
  readonly #timers: TimerService;
  /** Where due entries go: set by {@link start}. */
  #onDue: DueHandler = () => 0;
  readonly #batchSize: number;
  readonly #onError: (error: unknown) => void;
  readonly #workClock: () => number;
  readonly #maxKeptEntries: number;
  /** Earliest due time per group, pending writes included. */
  readonly #earliestByGroup = new Map<string, number>();
  /** This process's schedule writes not yet known to be committed, and its deferred additions. */
  readonly #writes: UncommittedWrites;
  /** Entries added `recoverable` and kept in memory only: never written. */
  readonly #kept = new KeptEntries();
  /** Groups that took fewer entries than were due; skipped until resumed. */
  readonly #paused = new Set<string>();
  /**
   * Per group, the last key taken, when every entry up to it has been taken. Reads of the store
   * start after it, so the entries taken but whose removal has not committed yet are not read
   * again on every pass. An addition at or before it drops the bound.
   */
  readonly #takenThrough = new Map<string, ScheduleKey>();
  #timer: TimerHandle | undefined;
  #timerDueAtMs = Number.POSITIVE_INFINITY;
  #inPass = false;
  #stopped = false;

  constructor(options: SchedulerOptions) {
    this.#store = options.store;
    this.#writes = new UncommittedWrites(options.store);
    this.#clock = options.clock;
    this.#timers = options.timers;
    this.#batchSize = options.batchSize ?? 64;
    this.#onError = options.onError ?? (() => {});
    this.#workClock = options.workClock ?? realWorkClock;
    this.#maxKeptEntries = options.maxKeptEntries ?? KEPT_ENTRIES;
  }

  /**
   * Read each group's earliest entry from the store, arm the timer, and from now on hand due
   * entries to `onDue`. Due entries fire at once.
   */
  start(onDue: DueHandler): void {
    this.#onDue = onDue;
    for (const group of this.#store.listScheduleGroups()) this.#refreshEarliest(group);
    this.#arm();
  }

  /** Stop firing; pending entries stay in the store. */
  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /**
   * Schedule `entry` for a message of `group` at `dueAtMs`; returns the key to cancel it with. A
   * `deferred` entry fires on time like any other, but is written only by the next write-behind
   * flush: the delivery records' (`DeliveryRecords.flush`), which writes the record that names it
   * in the same transaction. A `recoverable` one due within {@link RECOVERABLE_HORIZON_MS} is
   * never written, while fewer than {@link KEPT_ENTRIES} are kept.
   */
  add(
    group: string,
    dueAtMs: number,
    topic: string,
    offset: number,
    entry: ScheduleEntry,
    durability: ScheduleDurability = 'now',
  ): ScheduleKey {
    const key: ScheduleKey = [group, Math.floor(dueAtMs), topic, offset];
    const takenThrough = this.#takenThrough.get(group);
    if (takenThrough && compareKeys(key, takenThrough) <= 0) this.#takenThrough.delete(group);
    if (durability === 'recoverable' && this.#mayKeep(key)) this.#kept.add(key, entry);
    else if (durability === 'deferred') this.#writes.defer(key, entry);
    else this.#writes.put(key, entry);
    this.#earliestByGroup.set(
      group,
      Math.min(this.#earliestByGroup.get(group) ?? Number.POSITIVE_INFINITY, key[1]),
    );
    this.#arm();
    return key;
  }

  /**
   * Cancel an entry. The group's earliest time may now be too early; that costs one pass that
   * finds nothing, after which it is computed again.
   */
  remove(key: ScheduleKey): void {
    // Kept in memory only: forgetting it is the whole removal.
    if (!this.#kept.remove(key)) this.#writes.remove(key);
  }

  /**
   * Write every deferred entry still scheduled, in the caller's turn: the delivery records'
   * write-behind flush calls it, so an entry commits with the record that names it.
   */
  writeDeferred(): void {
    this.#writes.writeDeferred();
  }

  /**
   * Whether `group` has entries due at `nowMs` that have not fired yet: a busy broker, a restart
   * after downtime, or a full ready queue (a paused group). May say so for a moment after the
   * entry it knew as earliest was removed, until the next pass looks.
   */
  hasDue(group: string, nowMs: number): boolean {
    return (this.#earliestByGroup.get(group) ?? Number.POSITIVE_INFINITY) <= nowMs;
  }

  /** A paused group has room again: run its due entries. */
  resume(group: string): void {
    if (this.#paused.delete(group)) this.#arm();
  }

  /** Resolves when no pass is running. Passes are synchronous, so this is for symmetry in tests. */
  whenIdle(): Promise<void> {
    return Promise.resolve();
  }

  /** How many groups are paused for lack of room (for metrics and tests). */
  get pausedGroups(): number {
    return this.#paused.size;
  }

  /**
   * Whether a `recoverable` entry may stay in memory: due within the horizon, room left, and no
   * write of this process pending for its key (which the overlay's rules then order).
   */
  #mayKeep(key: ScheduleKey): boolean {
    return (
      key[1] <= this.#clock.now() + RECOVERABLE_HORIZON_MS &&
      this.#kept.size < this.#maxKeptEntries &&
      !this.#kept.has(key) &&
      !this.#writes.has(key)
    );
  }

  #arm(): void {
    if (this.#stopped || this.#inPass) return;
    let earliestMs = Number.POSITIVE_INFINITY;
    for (const [group, dueAtMs] of this.#earliestByGroup) {
      if (!this.#paused.has(group) && dueAtMs < earliestMs) earliestMs = dueAtMs;
    }
    if (earliestMs === Number.POSITIVE_INFINITY) return;
    if (this.#timer && this.#timerDueAtMs <= earliestMs) return;
    this.#timer?.cancel();
    this.#timerDueAtMs = earliestMs;
    this.#timer = this.#timers.setTimer(earliestMs - this.#clock.now(), () => {
      this.#timer = undefined;
      this.#timerDueAtMs = Number.POSITIVE_INFINITY;
      this.#runPass();
    });
  }

  #runPass(): void {
    if (this.#stopped) return;
    this.#inPass = true;
    const startedMs = this.#workClock();
    let budgetMs = TURN_BUDGET_MS;
    let moreDue = false;
    try {
      for (let round = 0; round < MAX_ROUNDS_PER_PASS; round++) {
        const nowMs = this.#clock.now();
        const dueGroups = [...this.#earliestByGroup]
          .filter(([group, dueAtMs]) => dueAtMs <= nowMs && !this.#paused.has(group))
          .map(([group]) => group);
        if (dueGroups.length === 0) break;
        if (round === 0 && this.#isCatchingUp(dueGroups, nowMs)) budgetMs = CATCH_UP_TURN_BUDGET_MS;
        moreDue = false;
        for (const group of dueGroups) {
          const due = this.#readDue(group, nowMs);
          let taken = 0;
          try {
            taken = due.length === 0 ? 0 : Math.max(0, Math.min(due.length, this.#onDue(group, due)));
          } finally {
            // The kept entries the read took out of memory and the handler did not take (all of
            // them, if it threw) are kept again.
            for (let i = taken; i < due.length; i++) {
              const entry = due[i];
              if (entry instanceof KeptEntry) this.#kept.putBack(entry);
            }
          }
          for (let i = 0; i < taken; i++) {
            const entry = due[i] as DueEntry;
            // A kept entry was taken out of memory by the read: nothing more to remove.
            if (!(entry instanceof KeptEntry)) this.remove(entry.key);
          }
          const lastTaken = due[taken - 1];
          if (lastTaken) this.#takenThrough.set(group, lastTaken.key);
          if (taken < due.length) this.#paused.add(group);
          else if (due.length === this.#batchSize) moreDue = true;
          this.#refreshEarliest(group);
        }
        if (!moreDue || this.#workClock() - startedMs >= budgetMs) break;
      }
    } catch (error) {
      this.#onError(error);
    } finally {
      this.#inPass = false;
      // A backlog left over goes on right after the I/O waiting now; otherwise the next due time.
      if (moreDue && !this.#stopped) this.#continueSoon();
      else this.#arm();
    }
  }

  /** Whether one of the groups about to be served has an entry due {@link LATE_MS} ago or more. */
  #isCatchingUp(dueGroups: readonly string[], nowMs: number): boolean {
    for (const group of dueGroups) {
      if ((this.#earliestByGroup.get(group) ?? nowMs) <= nowMs - LATE_MS) return true;
    }
    return false;
  }

  /** Run the next pass after the I/O waiting now, unless a pass is already queued to run as soon. */
  #continueSoon(): void {
    if (this.#timer && this.#timerDueAtMs <= this.#clock.now()) return;
    this.#timer?.cancel();
    this.#timerDueAtMs = this.#clock.now();
    this.#timer = soon(this.#timers, () => {
      this.#timer = undefined;
      this.#timerDueAtMs = Number.POSITIVE_INFINITY;
      this.#runPass();
    });
  }

  /**
   * A group's entries due at `nowMs`, a batch at most: committed ones, minus this process's pending
   * writes, plus its pending additions and the entries it keeps in memory. Those of the batch kept
   * in memory ({@link KeptEntry}) are taken out of it: the caller gives back the ones it does not take.
   */
  #readDue(group: string, nowMs: number): DueEntry[] {
    const fromMemory = this.#kept.takeDue(group, nowMs, this.#batchSize);
    const stored = this.#readDueWritten(group, nowMs);
    if (fromMemory.length === 0) return stored;
    if (stored.length === 0) return fromMemory;
    const merged = [...stored, ...fromMemory].sort((a, b) => compareKeys(a.key, b.key));
    for (const entry of merged.slice(this.#batchSize)) {
      if (entry instanceof KeptEntry) this.#kept.putBack(entry);
    }
    return merged.slice(0, this.#batchSize);
  }

  /** A group's written entries due at `nowMs`: committed ones, minus this process's pending writes, plus its pending additions. */
  #readDueWritten(group: string, nowMs: number): DueEntry[] {
    const pending = this.#writes.of(group);
    if (!pending) {
      return this.#store.readDueSchedule(group, nowMs, this.#batchSize, this.#takenThrough.get(group));
    }
    // Committed entries a pending write replaces or removes are skipped; page on past them until a
    // batch is full or nothing more is due, so a pass costs the batch, not every write in flight.
    const due: DueEntry[] = [];
    let after = this.#takenThrough.get(group);
    for (let guard = 0; guard <= pending.size; guard++) {
      const page = this.#store.readDueSchedule(group, nowMs, this.#batchSize, after);
      for (const entry of page) if (!pending.has(entry.key)) due.push(entry);
      const last = page.at(-1);
      if (page.length < this.#batchSize || due.length >= this.#batchSize || !last) break;
      after = last.key;
    }
    for (const write of pending.values()) {
      if (write.entry !== undefined && write.key[1] <= nowMs)
        due.push({ key: write.key, entry: write.entry });
    }
    due.sort((a, b) => compareKeys(a.key, b.key));
    return due.slice(0, this.#batchSize);
  }

  /** A group's earliest entry, committed, pending or kept in memory, not counting pending removals. */
  #refreshEarliest(group: string): void {
    const pending = this.#writes.of(group);
    let earliest = this.#kept.earliest(group) ?? Number.POSITIVE_INFINITY;
    let after = this.#takenThrough.get(group);
    // Page past the committed keys that pending writes remove or replace.
    for (let guard = 0; guard <= (pending?.size ?? 0); guard++) {
      const page = this.#store.scheduleKeys(group, pending ? PAGE_KEYS : 1, after);
      const first = page.find((key) => !pending?.has(key));
      if (first) {
        earliest = Math.min(earliest, first[1]);
        break;
      }
      const last = page.at(-1);
      if (!last || page.length < PAGE_KEYS) break;
      after = last;
    }
    for (const write of pending?.values() ?? []) {
      if (write.entry !== undefined && write.key[1] < earliest) earliest = write.key[1];
    }
    if (earliest === Number.POSITIVE_INFINITY) this.#earliestByGroup.delete(group);
    else this.#earliestByGroup.set(group, earliest);
  }
}
