/** A message of a group that is Ready again (released, lease expired, retry or delay due). */
export interface ReadyRef {
  readonly topic: string;
  readonly offset: number;
  /** The message's FIFO key, so a FIFO group can hold it back without reading the message (P5). */
  readonly messageGroup?: string;
}

/**
 * Which line of the queue a Ready message waits in. `again`: it was delivered before (a retry
 * that fell due, a release, an expired lease, a Ready state recovered after a delivery); `first`:
 * it never was (a delay message whose time came, a FIFO message parked behind its head, a message
 * redriven from the DLQ with its attempts given back).
 */
export type ReadyLane = 'again' | 'first';

/**
 * A group's Ready messages that the log scan does not hand out: two FIFO lines with O(1) push and
 * shift, the `again` line served before the `first` one, so a retry that fell due is delivered
 * before messages that never were (P3's order), even when a burst of delay messages fell due
 * ahead of it. Consumers may skip entries for topics they do not subscribe to, so taking is
 * "first matching", which keeps order among the rest.
 */
export class ReadyQueue {
  readonly #again = new ReadyLine();
  readonly #first = new ReadyLine();

  get size(): number {
    return this.#again.size + this.#first.size;
  }

  /** Entries in the `again` line: messages delivered before and Ready again. */
  get againSize(): number {
    return this.#again.size;
  }

  push(ref: ReadyRef, lane: ReadyLane): void {
    (lane === 'again' ? this.#again : this.#first).push(ref);
  }

  /** The entries, in the order {@link take} would hand them out, left in place. */
  *[Symbol.iterator](): Generator<ReadyRef> {
    yield* this.#again;
    yield* this.#first;
  }

  /**
   * Remove and return up to `max` entries accepted by `accept`, the `again` line first, each line
   * oldest first; `accept` answering `'stop'` ends the take there (the entry stays), as when a
   * receive's answer is full of bytes.
   */
  take(max: number, accept: (ref: ReadyRef) => boolean | 'stop'): ReadyRef[] {
    const taken: ReadyRef[] = [];
    if (this.#again.take(max, accept, taken) === 'stopped') return taken;
    this.#first.take(max, accept, taken);
    return taken;
  }
}

/** One line of a {@link ReadyQueue}: a FIFO whose taken entries leave holes, reclaimed in bulk. */
class ReadyLine {
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

  *[Symbol.iterator](): Generator<ReadyRef> {
    for (let i = this.#head; i < this.#items.length; i++) {
      const ref = this.#items[i];
      if (ref) yield ref;
    }
  }

  /** Move accepted entries into `taken` until it holds `max`; `'stopped'` when `accept` said stop. */
  take(max: number, accept: (ref: ReadyRef) => boolean | 'stop', taken: ReadyRef[]): 'stopped' | 'done' {
    let stopped = false;
    for (let i = this.#head; i < this.#items.length && taken.length < max; i++) {
      const ref = this.#items[i];
      if (!ref) continue;
      const verdict = accept(ref);
      if (verdict === 'stop') {
        stopped = true;
        break;
      }
      if (verdict) {
        taken.push(ref);
        this.#items[i] = undefined;
        this.#size--;
      }
    }
    this.#compact();
    return stopped ? 'stopped' : 'done';
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
