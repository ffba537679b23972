/** A message of a group that is Ready again (released, lease expired, retry or delay due). */
export interface ReadyRef {
  readonly topic: string;
  readonly offset: number;
  /** The message's FIFO key, so a FIFO group can hold it back without reading the message (P5). */
  readonly messageGroup?: string;
}

/**
 * A FIFO of {@link ReadyRef}s with O(1) push and shift. Consumers may skip entries for topics they
 * do not subscribe to, so taking is "first matching", which keeps order among the rest.
 */
export class ReadyQueue {
  #items: (ReadyRef | undefined)[] = [];
  #head = 0;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  push(ref: ReadyRef): void {
    this.#items.push(ref);
    this.#size++;
  }

  /** The entries, oldest first, left in place. */
  *[Symbol.iterator](): Generator<ReadyRef> {
    for (let i = this.#head; i < this.#items.length; i++) {
      const ref = this.#items[i];
      if (ref) yield ref;
    }
  }

  /**
   * Remove and return up to `max` entries accepted by `accept`, oldest first; `accept` answering
   * `'stop'` ends the take there (the entry stays), as when a receive's answer is full of bytes.
   */
  take(max: number, accept: (ref: ReadyRef) => boolean | 'stop'): ReadyRef[] {
    const taken: ReadyRef[] = [];
    for (let i = this.#head; i < this.#items.length && taken.length < max; i++) {
      const ref = this.#items[i];
      if (!ref) continue;
      const verdict = accept(ref);
      if (verdict === 'stop') break;
      if (verdict) {
        taken.push(ref);
        this.#items[i] = undefined;
        this.#size--;
      }
    }
    this.#compact();
    return taken;
  }

  #compact(): void {
    while (this.#head < this.#items.length && this.#items[this.#head] === undefined) this.#head++;
    // Reclaim the dead prefix once it dominates, so memory tracks the live size.
    if (this.#head > 1_024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }
}
