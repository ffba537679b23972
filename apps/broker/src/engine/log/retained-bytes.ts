import type { StoredMessage } from '../../store/records.js';

/** Messages read per step while counting, so counting a large topic never holds the event loop. */
const COUNT_BATCH = 512;

/**
 * The body bytes a topic retains, for `retentionBytes` (DESIGN.md §5): the sum of the bodies from
 * its first retained offset up to `countedThrough`. Counted lazily, only for topics that have a
 * size limit, and brought up to date at the start of each retention pass: appends are not slowed
 * by it, and the newest messages are counted from the engine's memory.
 */
export class RetainedBytes {
  #countedThrough = 0;
  #bytes = 0;

  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Count up to `nextOffset`, one batch of the log per call; returns whether it is up to date.
   * `readLog` starts at the first retained offset whatever it is given.
   */
  countStep(
    firstOffset: number,
    nextOffset: number,
    readLog: (fromOffset: number, limit: number) => StoredMessage[],
  ): boolean {
    if (this.#countedThrough < firstOffset) {
      // Counting starts (or restarts after a gap) at the first retained message.
      this.#countedThrough = firstOffset;
      this.#bytes = 0;
    }
    if (this.#countedThrough >= nextOffset) return true;
    const batch = readLog(this.#countedThrough, COUNT_BATCH);
    if (batch.length === 0) {
      this.#countedThrough = nextOffset;
      return true;
    }
    for (const message of batch) {
      this.#bytes += message.body.byteLength;
      this.#countedThrough = message.offset + 1;
    }
    return this.#countedThrough >= nextOffset;
  }

  /** A counted message was deleted. */
  deleted(message: StoredMessage): void {
    if (message.offset < this.#countedThrough) this.#bytes -= message.body.byteLength;
  }
}
