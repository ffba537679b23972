/** Options of {@link TickBatcher}. */
export interface TickBatcherOptions<TItem> {
  /**
   * Takes one batch: every item added since the last flush, in the order added, never none. The
   * array is the caller's to keep or empty.
   */
  readonly flush: (items: TItem[]) => void;
  /**
   * How long the first item of a batch waits for others to join it, in ms. Unset, the batch closes
   * in a microtask its first item queues: the items the rest of the current job adds (and the
   * microtasks queued before it) share the batch, and none waits for a timer.
   * @default undefined (the end of the tick)
   */
  readonly delayMs?: number;
}

/**
 * Collects items into batches: the first item added schedules a flush at the end of the tick (or
 * `delayMs` later), and every item added until then joins its batch. The clients send many small
 * requests at once (sends, acks, delivery results); batching turns them into one frame, and the
 * broker into one durable commit, instead of one each.
 */
export class TickBatcher<TItem> {
  readonly #options: TickBatcherOptions<TItem>;
  #items: TItem[] = [];
  /** A microtask is queued to flush (when `delayMs` is unset). */
  #flushQueued = false;
  /** The timer that flushes (when `delayMs` is set). */
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: TickBatcherOptions<TItem>) {
    this.#options = options;
  }

  /** Items waiting for the next flush. */
  get size(): number {
    return this.#items.length;
  }

  /** Add `item` to the batch being collected, scheduling its flush if it is the first. */
  add(item: TItem): void {
    this.#items.push(item);
    const { delayMs } = this.#options;
    if (delayMs !== undefined) {
      this.#timer ??= setTimeout(() => this.flush(), delayMs);
    } else if (!this.#flushQueued) {
      this.#flushQueued = true;
      queueMicrotask(() => {
        this.#flushQueued = false;
        this.flush();
      });
    }
  }

  /** Hand the items collected so far over now, without waiting for the scheduled flush. */
  flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#items.length === 0) return;
    const items = this.#items;
    // Swapped before the hand-over, so an item added while it runs starts the next batch.
    this.#items = [];
    this.#options.flush(items);
  }

  /** Drop the items collected so far; a flush scheduled for them finds none. */
  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#items = [];
  }
}
