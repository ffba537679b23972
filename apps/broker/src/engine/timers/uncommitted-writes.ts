import type { BrokerStore } from '../../store/broker-store.js';
import type { ScheduleEntry, ScheduleKey } from '../../store/records.js';
import { type PendingWrite, ScheduleOverlay } from './schedule-overlay.js';

/**
 * The scheduler's schedule writes that the store's reads may not show yet: those queued and not
 * known to be committed (bounded by the store's write latency), and the `deferred` additions,
 * not written at all until the write-behind flush ({@link writeDeferred}). The scheduler merges
 * them into every read of the store, so a due entry fires on time while the store is busy
 * committing, and a removed one does not fire while its removal commits.
 */
export class UncommittedWrites {
  readonly #store: BrokerStore;
  /** Per group, the writes by key. */
  readonly #byGroup = new Map<string, ScheduleOverlay>();
  /** The writes waiting on each commit. */
  readonly #byCommit = new Map<Promise<void>, PendingWrite[]>();
  /** Entries added `deferred` and not written yet. */
  readonly #deferred = new Set<PendingWrite>();

  constructor(store: BrokerStore) {
    this.#store = store;
  }

  /** One group's writes, if it has any. */
  of(group: string): ScheduleOverlay | undefined {
    return this.#byGroup.get(group);
  }

  /** Whether a write of `key` is uncommitted or deferred. */
  has(key: ScheduleKey): boolean {
    return this.#byGroup.get(key[0])?.has(key) ?? false;
  }

  /** Write `entry` under `key` with this turn's commit. */
  put(key: ScheduleKey, entry: ScheduleEntry): void {
    this.#track(key, entry, this.#store.putSchedule(key, entry));
  }

  /** Keep an addition in memory until {@link writeDeferred}; it shadows the store's entry of the key, if any. */
  defer(key: ScheduleKey, entry: ScheduleEntry): void {
    const pending: PendingWrite = { key, entry, deferred: true };
    this.#setPending(pending);
    this.#deferred.add(pending);
  }

  /** Remove the entry of `key`: forget a deferred addition, which the store never saw, or write the removal. */
  remove(key: ScheduleKey): void {
    const writes = this.#byGroup.get(key[0]);
    const pending = writes?.get(key);
    if (writes && pending?.deferred) {
      // Never written: forgetting it is the whole removal.
      this.#deferred.delete(pending);
      writes.delete(key);
      if (writes.size === 0) this.#byGroup.delete(key[0]);
      return;
    }
    this.#track(key, undefined, this.#store.deleteSchedule(key));
  }

  /** Write every deferred entry still scheduled, in the caller's turn. */
  writeDeferred(): void {
    const deferred = [...this.#deferred];
    this.#deferred.clear();
    for (const { key, entry } of deferred) {
      if (entry !== undefined) this.#track(key, entry, this.#store.putSchedule(key, entry));
    }
  }

  /** Record a write as this process's newest for its key, in place of one deferred before it. */
  #setPending(pending: PendingWrite): void {
    const writes = this.#writesOf(pending.key[0]);
    const replaced = writes.get(pending.key);
    if (replaced?.deferred) this.#deferred.delete(replaced);
    writes.set(pending);
  }

  #writesOf(group: string): ScheduleOverlay {
    let writes = this.#byGroup.get(group);
    if (!writes) {
      writes = new ScheduleOverlay();
      this.#byGroup.set(group, writes);
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

  /** A write committed: drop it unless a later write to its key replaced it. */
  #forget(write: PendingWrite): void {
    const group = write.key[0];
    const writes = this.#byGroup.get(group);
    if (!writes?.delete(write.key, write)) return;
    if (writes.size === 0) this.#byGroup.delete(group);
  }
}
