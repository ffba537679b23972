/** What a {@link RunList} keeps on its items: the links, so the list allocates nothing. */
export interface RunLinks<TRun> {
  previous: TRun | undefined;
  next: TRun | undefined;
  /** Whether the item is in a list now. */
  listed: boolean;
}

/**
 * A pool's running listeners, in start order: a doubly linked list through the runs themselves.
 * Adding or removing one is a few writes, where a `Set` would hash every run, once per message.
 * Items must not be deleted while the list is iterated.
 */
export class RunList<TRun extends RunLinks<TRun>> {
  #first: TRun | undefined;
  #last: TRun | undefined;
  #size = 0;

  /** Items in the list. */
  get size(): number {
    return this.#size;
  }

  /** Append `run`, which must not be in a list. */
  add(run: TRun): void {
    run.previous = this.#last;
    run.next = undefined;
    if (this.#last === undefined) this.#first = run;
    else this.#last.next = run;
    this.#last = run;
    run.listed = true;
    this.#size += 1;
  }

  /** Remove `run`; false when it was not in the list. */
  delete(run: TRun): boolean {
    if (!run.listed) return false;
    if (run.previous === undefined) this.#first = run.next;
    else run.previous.next = run.next;
    if (run.next === undefined) this.#last = run.previous;
    else run.next.previous = run.previous;
    run.previous = undefined;
    run.next = undefined;
    run.listed = false;
    this.#size -= 1;
    return true;
  }

  /** Empty the list. */
  clear(): void {
    for (let run = this.#first; run !== undefined; ) {
      const next = run.next;
      run.previous = undefined;
      run.next = undefined;
      run.listed = false;
      run = next;
    }
    this.#first = undefined;
    this.#last = undefined;
    this.#size = 0;
  }

  /** The items, first added first. */
  *[Symbol.iterator](): Iterator<TRun> {
    for (let run = this.#first; run !== undefined; run = run.next) yield run;
  }
}
