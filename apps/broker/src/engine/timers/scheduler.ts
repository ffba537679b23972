import type { Clock } from '@ricochet/core';
import type { BrokerStore } from '../../store/broker-store.js';
import type { ScheduleEntry, ScheduleKey } from '../../store/records.js';
import { CATCH_UP_TURN_BUDGET_MS, realWorkClock, TURN_BUDGET_MS } from './loop-budget.js';
import { type PendingWrite, ScheduleOverlay } from './schedule-overlay.js';
import { soon, type TimerHandle, type TimerService } from './timer-service.js';

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
}

/**
 * `now`: the entry is written with this turn's commit. `deferred`: it stays in memory until the
 * next write-behind flush writes it ({@link Scheduler.writeDeferred}), and an entry removed before
 * that never reaches the store.
 */
export type ScheduleDurability = 'now' | 'deferred';

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
 * million pending retries cost disk, not heap or timers.
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
  /** Earliest due time per group, pending writes included. */
  readonly #earliestByGroup = new Map<string, number>();
  /** Per group, this process's schedule writes not yet known to be committed, by key. */
  readonly #pending = new Map<string, ScheduleOverlay>();
  /** The pending writes waiting on each commit. */
  readonly #byCommit = new Map<Promise<void>, PendingWrite[]>();
  /** Entries added `deferred` and not written yet. */
  readonly #deferred = new Set<PendingWrite>();
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
    this.#clock = options.clock;
    this.#timers = options.timers;
    this.#batchSize = options.batchSize ?? 64;
    this.#onError = options.onError ?? (() => {});
    this.#workClock = options.workClock ?? realWorkClock;
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
   * in the same transaction.
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
    if (durability === 'deferred') this.#defer(key, entry);
    else this.#track(key, entry, this.#store.putSchedule(key, entry));
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
    const writes = this.#pending.get(key[0]);
    const pending = writes?.get(key);
    if (writes && pending?.deferred) {
      // Never written: forgetting it is the whole removal.
      this.#deferred.delete(pending);
      writes.delete(key);
      if (writes.size === 0) this.#pending.delete(key[0]);
      return;
    }
    this.#track(key, undefined, this.#store.deleteSchedule(key));
  }

  /**
   * Write every deferred entry still scheduled, in the caller's turn: the delivery records'
   * write-behind flush calls it, so an entry commits with the record that names it.
   */
  writeDeferred(): void {
    const deferred = [...this.#deferred];
    this.#deferred.clear();
    for (const { key, entry } of deferred) {
      if (entry !== undefined) this.#track(key, entry, this.#store.putSchedule(key, entry));
    }
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

  /** Keep an addition in memory until {@link writeDeferred}; it shadows the store's entry of the key, if any. */
  #defer(key: ScheduleKey, entry: ScheduleEntry): void {
    const pending: PendingWrite = { key, entry, deferred: true };
    this.#setPending(pending);
    this.#deferred.add(pending);
  }

  /** Record a write as this process's newest for its key, in place of one deferred before it. */
  #setPending(pending: PendingWrite): void {
    const writes = this.#writesOf(pending.key[0]);
    const replaced = writes.get(pending.key);
    if (replaced?.deferred) this.#deferred.delete(replaced);
    writes.set(pending);
  }

  #writesOf(group: string): ScheduleOverlay {
    let writes = this.#pending.get(group);
    if (!writes) {
      writes = new ScheduleOverlay();
      this.#pending.set(group, writes);
    }
    return writes;
  }

  #track(key: ScheduleKey, entry: ScheduleEntry | undefined, write: Promise<void>): void {
    const pending: PendingWrite = { key, entry };
    this.#setPending(pending);
    // The store hands every write of one transaction the same promise: one callback per commit.
    let committing = this.#byCommit.get(write);
    if (!committing) {
      const waiting: PendingWrite[] = [];
      const settle = () => {
        this.#byCommit.delete(write);
        for (const done of waiting) this.#forget(done);
      };
      write.then(settle, settle);
      this.#byCommit.set(write, waiting);
      committing = waiting;
    }
    committing.push(pending);
  }

  /** A write committed: drop it from the overlay unless a later write to its key replaced it. */
  #forget(write: PendingWrite): void {
    const group = write.key[0];
    const writes = this.#pending.get(group);
    if (!writes?.delete(write.key, write)) return;
    if (writes.size === 0) this.#pending.delete(group);
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
          const taken = due.length === 0 ? 0 : Math.max(0, Math.min(due.length, this.#onDue(group, due)));
          for (let i = 0; i < taken; i++) this.remove((due[i] as DueEntry).key);
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

  /** A group's entries due at `nowMs`: committed ones, minus this process's pending writes, plus its pending additions. */
  #readDue(group: string, nowMs: number): DueEntry[] {
    const pending = this.#pending.get(group);
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

  /** A group's earliest entry, committed or pending, not counting pending removals. */
  #refreshEarliest(group: string): void {
    const pending = this.#pending.get(group);
    let earliest = Number.POSITIVE_INFINITY;
    let after = this.#takenThrough.get(group);
    // Page past the committed keys that pending writes remove or replace.
    for (let guard = 0; guard <= (pending?.size ?? 0); guard++) {
      const page = this.#store.scheduleKeys(group, pending ? PAGE_KEYS : 1, after);
      const first = page.find((key) => !pending?.has(key));
      if (first) {
        earliest = first[1];
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

function compareKeys(a: ScheduleKey, b: ScheduleKey): number {
  if (a[1] !== b[1]) return a[1] - b[1];
  if (a[2] !== b[2]) return a[2] < b[2] ? -1 : 1;
  return a[3] - b[3];
}
