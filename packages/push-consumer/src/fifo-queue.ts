/** Compact the queue once this many consumed slots lead it, and they are most of it. */
const COMPACT_AFTER_SLOTS = 1_024;

/**
 * A first-in, first-out queue with O(1) `push` and `shift`: an array read from a moving head,
 * compacted now and then. `Array#shift` would copy the whole array on every call once it is large.
 */
export class FifoQueue<TItem> {
  #items: (TItem | undefined)[] = [];
  #head = 0;

  /** Items in the queue. */
  get length(): number {
    return this.#items.length - this.#head;
  }

  push(item: TItem): void {
    this.#items.push(item);
  }

  /** The oldest item, removed; `undefined` when the queue is empty. */
  shift(): TItem | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head += 1;
    if (this.#head >= COMPACT_AFTER_SLOTS && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Remove every item and return them, oldest first. */
  drain(): TItem[] {
    const items = this.#items.slice(this.#head) as TItem[];
    this.#items = [];
    this.#head = 0;
    return items;
  }
}
