import type { Clock } from '@ricochet/core';
import type { BrokerStore } from '../store/broker-store.js';
import type { ScheduleEntry, ScheduleKey } from '../store/records.js';
import type { TimerHandle, TimerService } from './timer-service.js';

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
  readonly onDue: DueHandler;
  /** Entries read per range scan. @default 256 */
  readonly batchSize?: number;
  /** Called when a pass fails; the scheduler retries on its next wake-up. */
  readonly onError?: (error: unknown) => void;
}

/**
 * Retries, lease deadlines and delays live in the store's time-ordered schedule; this class keeps
 * only one number per group in memory (its earliest due time) and one timer for all of them. A
 * million pending retries therefore cost disk, not heap or timers.
 */
export class Scheduler {
  readonly #store: BrokerStore;
  readonly #clock: Clock;
  readonly #timers: TimerService;
  readonly #onDue: DueHandler;
  readonly #batchSize: number;
  readonly #onError: (error: unknown) => void;
  /** Earliest due time per group, including entries whose write has not committed yet. */
  readonly #earliestByGroup = new Map<string, number>();
  /** Earliest due time per group of entries added while a pass runs (the pass may not see them). */
  readonly #addedDuringPass = new Map<string, number>();
  /** Groups that took fewer entries than were due; skipped until resumed. */
  readonly #paused = new Set<string>();
  #timer: TimerHandle | undefined;
  #timerDueAtMs = Number.POSITIVE_INFINITY;
  #passRunning = false;
  #currentPass: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(options: SchedulerOptions) {
    this.#store = options.store;
    this.#clock = options.clock;
    this.#timers = options.timers;
    this.#onDue = options.onDue;
    this.#batchSize = options.batchSize ?? 256;
    this.#onError = options.onError ?? (() => {});
  }

  /** Read each group's earliest entry from the store and arm the timer. Due entries fire at once. */
  start(): void {
    for (const group of this.#store.listScheduleGroups()) {
      const first = this.#store.firstSchedule(group);
      // Entries added before start (during recovery) may be earlier and not committed yet.
      if (first)
        this.#earliestByGroup.set(
          group,
          Math.min(first[1], this.#earliestByGroup.get(group) ?? Number.POSITIVE_INFINITY),
        );
    }
    this.#arm();
  }

  /** Stop firing; pending entries stay in the store. */
  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** Schedule `entry` for a message of `group` at `dueAtMs`; returns the key to cancel it with. */
  add(group: string, dueAtMs: number, topic: string, offset: number, entry: ScheduleEntry): ScheduleKey {
    const key: ScheduleKey = [group, Math.floor(dueAtMs), topic, offset];
    void this.#store.putSchedule(key, entry);
    this.#earliestByGroup.set(
      group,
      Math.min(this.#earliestByGroup.get(group) ?? Number.POSITIVE_INFINITY, key[1]),
    );
    if (this.#passRunning) {
      this.#addedDuringPass.set(
        group,
        Math.min(this.#addedDuringPass.get(group) ?? Number.POSITIVE_INFINITY, key[1]),
      );
    }
    this.#arm();
    return key;
  }

  /**
   * Cancel an entry. The group's earliest time may now be too early; that only costs one empty
   * scan, after which it is read again from the store.
   */
  remove(key: ScheduleKey): void {
    void this.#store.deleteSchedule(key);
  }

  /** A paused group has room again: run its due entries. */
  resume(group: string): void {
    if (this.#paused.delete(group)) this.#arm();
  }

  /** Resolves when the pass in progress, if any, has finished (for tests and shutdown). */
  whenIdle(): Promise<void> {
    return this.#currentPass;
  }

  /** How many groups are paused for lack of room (for metrics and tests). */
  get pausedGroups(): number {
    return this.#paused.size;
  }

  #arm(): void {
    if (this.#stopped) return;
    let earliestMs = Number.POSITIVE_INFINITY;
    for (const [group, dueAtMs] of this.#earliestByGroup) {
      if (!this.#paused.has(group) && dueAtMs < earliestMs) earliestMs = dueAtMs;
    }
    if (earliestMs === Number.POSITIVE_INFINITY) return;
    // A running pass re-arms when it ends.
    if (this.#passRunning) return;
    if (this.#timer && this.#timerDueAtMs <= earliestMs) return;
    this.#timer?.cancel();
    this.#timerDueAtMs = earliestMs;
    this.#timer = this.#timers.setTimer(earliestMs - this.#clock.now(), () => {
      this.#timer = undefined;
      this.#timerDueAtMs = Number.POSITIVE_INFINITY;
      this.#currentPass = this.#runPass();
    });
  }

  async #runPass(): Promise<void> {
    if (this.#passRunning || this.#stopped) return;
    this.#passRunning = true;
    this.#addedDuringPass.clear();
    try {
      // Scans read committed data only: wait until every schedule write so far (including the
      // deletions of the previous pass) is visible, or an entry could be missed or run twice.
      await this.#store.committed();
      for (let round = 0; round < 10_000 && !this.#stopped; round++) {
        const nowMs = this.#clock.now();
        const dueGroups = [...this.#earliestByGroup].filter(
          ([group, dueAtMs]) => dueAtMs <= nowMs && !this.#paused.has(group),
        );
        if (dueGroups.length === 0) break;
        let moreDue = false;
        for (const [group] of dueGroups) {
          const due = this.#store.readDueSchedule(group, nowMs, this.#batchSize);
          const taken = due.length === 0 ? 0 : Math.max(0, Math.min(due.length, this.#onDue(group, due)));
          for (const { key } of due.slice(0, taken)) void this.#store.deleteSchedule(key);
          if (taken < due.length) this.#paused.add(group);
          else if (due.length === this.#batchSize) moreDue = true;
        }
        await this.#store.committed();
        for (const [group] of dueGroups) this.#refreshEarliest(group);
        if (!moreDue) break;
      }
    } catch (error) {
      this.#onError(error);
    } finally {
      this.#passRunning = false;
      this.#arm();
    }
  }

  /** Re-read a group's earliest entry after its due ones were taken. */
  #refreshEarliest(group: string): void {
    const first = this.#store.firstSchedule(group)?.[1] ?? Number.POSITIVE_INFINITY;
    const added = this.#addedDuringPass.get(group) ?? Number.POSITIVE_INFINITY;
    const earliest = Math.min(first, added);
    if (earliest === Number.POSITIVE_INFINITY) this.#earliestByGroup.delete(group);
    else this.#earliestByGroup.set(group, earliest);
  }
}
