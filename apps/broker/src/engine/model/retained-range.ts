/**
 * Which offsets of a topic retention has kept (DESIGN.md §5). Below `expiredBelow` every message
 * is deleted except the survivors: messages that were expired when the pass reached them but that
 * a group still held (a lease, a retry, a delay not yet due). From `expiredBelow` on, every message
 * is kept. Survivors are few — what groups hold at once — and are looked at again on every pass,
 * so a message stuck in a long retry never holds back the deletion of the messages around it.
 */
export class RetainedRange {
  #expiredBelow: number;
  /** Ascending, each below `#expiredBelow`. */
  #survivors: number[];

  constructor(expiredBelow = 0, survivors: readonly number[] = []) {
    this.#expiredBelow = expiredBelow;
    this.#survivors = [...survivors].sort((a, b) => a - b);
  }

  /** Every message below it is deleted, but the survivors. */
  get expiredBelow(): number {
    return this.#expiredBelow;
  }

  /** The lowest offset still stored. */
  get firstOffset(): number {
    return this.#survivors[0] ?? this.#expiredBelow;
  }

  get survivors(): readonly number[] {
    return this.#survivors;
  }

  /** How many messages are retained, given the topic's next offset. */
  count(nextOffset: number): number {
    return this.#survivors.length + Math.max(0, nextOffset - this.#expiredBelow);
  }

  /** Whether retention deleted the message at `offset`. */
  isDeleted(offset: number): boolean {
    return offset < this.#expiredBelow && this.#indexOf(offset) === -1;
  }

  /** The pass reached `below`: everything under it is deleted but `kept` (ascending, at or after the old frontier). */
  advance(below: number, kept: readonly number[]): void {
    if (below <= this.#expiredBelow) return;
    for (const offset of kept)
      if (offset >= this.#expiredBelow && offset < below) this.#survivors.push(offset);
    this.#expiredBelow = below;
  }

  /** A survivor was deleted at last. */
  release(offset: number): void {
    const index = this.#indexOf(offset);
    if (index !== -1) this.#survivors.splice(index, 1);
  }

  #indexOf(offset: number): number {
    let low = 0;
    let high = this.#survivors.length - 1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      const value = this.#survivors[middle] as number;
      if (value === offset) return middle;
      if (value < offset) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }
}
