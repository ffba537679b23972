import type { ScheduleEntry, ScheduleKey } from '../../store/records.js';

/** A schedule write this process made that may not be visible to the store's reads yet. */
export interface PendingWrite {
  readonly key: ScheduleKey;
  /** The entry put, or `undefined` for a removal. */
  readonly entry: ScheduleEntry | undefined;
  /** Not written to the store yet: it waits for the write-behind flush (`Scheduler.writeDeferred`). */
  readonly deferred?: true;
}

/**
 * One group's pending schedule writes, by key (`[group, dueAtMs, topic, offset]`), found without
 * building a key string: by topic, then offset, then due time. A message has few writes pending at
 * once (a lease's entry and the removal of the one before it), so an offset holds one write, or a
 * short array of them.
 *
 * Every simple lease adds an entry and every ack removes it, so these lookups are on the simple
 * consumer's hot path.
 */
export class ScheduleOverlay {
  readonly #byTopic = new Map<string, Map<number, PendingWrite | PendingWrite[]>>();
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(key: ScheduleKey): PendingWrite | undefined {
    const atOffset = this.#byTopic.get(key[2])?.get(key[3]);
    if (atOffset === undefined) return undefined;
    if (!Array.isArray(atOffset)) return atOffset.key[1] === key[1] ? atOffset : undefined;
    for (const write of atOffset) if (write.key[1] === key[1]) return write;
    return undefined;
  }

  has(key: ScheduleKey): boolean {
    return this.get(key) !== undefined;
  }

  /** Record `write` under its key, replacing the write pending for that key, if any. */
  set(write: PendingWrite): void {
    const [, dueAtMs, topic, offset] = write.key;
    let offsets = this.#byTopic.get(topic);
    if (!offsets) {
      offsets = new Map();
      this.#byTopic.set(topic, offsets);
    }
    const atOffset = offsets.get(offset);
    if (atOffset === undefined) {
      offsets.set(offset, write);
      this.#size++;
    } else if (!Array.isArray(atOffset)) {
      if (atOffset.key[1] === dueAtMs) {
        offsets.set(offset, write);
      } else {
        offsets.set(offset, [atOffset, write]);
        this.#size++;
      }
    } else {
      const index = atOffset.findIndex((pending) => pending.key[1] === dueAtMs);
      if (index >= 0) {
        atOffset[index] = write;
      } else {
        atOffset.push(write);
        this.#size++;
      }
    }
  }

  /** Forget the write pending for `key`, if `only` is given only when it is that very write. */
  delete(key: ScheduleKey, only?: PendingWrite): boolean {
    const offsets = this.#byTopic.get(key[2]);
    const atOffset = offsets?.get(key[3]);
    if (!offsets || atOffset === undefined) return false;
    if (!Array.isArray(atOffset)) {
      if (atOffset.key[1] !== key[1] || (only !== undefined && atOffset !== only)) return false;
      offsets.delete(key[3]);
    } else {
      const index = atOffset.findIndex(
        (pending) => pending.key[1] === key[1] && (only === undefined || pending === only),
      );
      if (index < 0) return false;
      atOffset.splice(index, 1);
      if (atOffset.length === 1) offsets.set(key[3], atOffset[0] as PendingWrite);
    }
    if (offsets.size === 0) this.#byTopic.delete(key[2]);
    this.#size--;
    return true;
  }

  *values(): IterableIterator<PendingWrite> {
    for (const offsets of this.#byTopic.values()) {
      for (const atOffset of offsets.values()) {
        if (Array.isArray(atOffset)) yield* atOffset;
        else yield atOffset;
      }
    }
  }
}
