/**
 * A set of offsets kept as sorted, disjoint runs `[start, end)`: the successes a group keeps no
 * history of, past its stored cursor (`SettledMarks`). Acks arrive nearly in log order, so a
 * window of thousands of offsets is a handful of runs, cheap to add to and to write out whole.
 */
export class OffsetRuns {
  /** Run starts and ends (exclusive), sorted; runs neither overlap nor touch. */
  readonly #starts: number[] = [];
  readonly #ends: number[] = [];

  /**
   * The runs of `flat` (`[start, end, start, end, …]`, as {@link toFlat} writes them). A pair that
   * is not a run after the previous one (never written so) is left out.
   */
  static fromFlat(flat: readonly number[] | undefined): OffsetRuns {
    const runs = new OffsetRuns();
    if (!flat) return runs;
    let previousEnd = -1;
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const start = flat[i] as number;
      const end = flat[i + 1] as number;
      if (!(Number.isSafeInteger(start) && Number.isSafeInteger(end) && start > previousEnd && end > start))
        continue;
      runs.#starts.push(start);
      runs.#ends.push(end);
      previousEnd = end;
    }
    return runs;
  }

  get isEmpty(): boolean {
    return this.#starts.length === 0;
  }

  /** The number of runs (not offsets). */
  get runCount(): number {
    return this.#starts.length;
  }

  has(offset: number): boolean {
    const i = this.#runAtOrBefore(offset);
    return i >= 0 && offset < (this.#ends[i] as number);
  }

  add(offset: number): void {
    const i = this.#runAtOrBefore(offset);
    if (i >= 0 && offset < (this.#ends[i] as number)) return;
    const joinsLeft = i >= 0 && this.#ends[i] === offset;
    const joinsRight = i + 1 < this.#starts.length && this.#starts[i + 1] === offset + 1;
    if (joinsLeft && joinsRight) {
      this.#ends[i] = this.#ends[i + 1] as number;
      this.#starts.splice(i + 1, 1);
      this.#ends.splice(i + 1, 1);
    } else if (joinsLeft) {
      this.#ends[i] = offset + 1;
    } else if (joinsRight) {
      this.#starts[i + 1] = offset;
    } else {
      this.#starts.splice(i + 1, 0, offset);
      this.#ends.splice(i + 1, 0, offset + 1);
    }
  }

  /**
   * Add every offset of `[start, end)` at once: a run of acks' marks. The runs it overlaps or
   * touches merge into one, so the runs stay disjoint and apart.
   */
  addRun(start: number, end: number): void {
    if (end <= start) return;
    if (end - start === 1) {
      this.add(start);
      return;
    }
    // The first run that ends at or after `start`: every run before it lies wholly below.
    let first = this.#starts.length;
    while (first > 0 && (this.#ends[first - 1] as number) >= start) first--;
    let last = first;
    let mergedStart = start;
    let mergedEnd = end;
    while (last < this.#starts.length && (this.#starts[last] as number) <= end) {
      mergedStart = Math.min(mergedStart, this.#starts[last] as number);
      mergedEnd = Math.max(mergedEnd, this.#ends[last] as number);
      last++;
    }
    this.#starts.splice(first, last - first, mergedStart);
    this.#ends.splice(first, last - first, mergedEnd);
  }

  /** Forget every offset below `offset`. */
  dropBelow(offset: number): void {
    let whole = 0;
    while (whole < this.#starts.length && (this.#ends[whole] as number) <= offset) whole++;
    if (whole > 0) {
      this.#starts.splice(0, whole);
      this.#ends.splice(0, whole);
    }
    if (this.#starts.length > 0 && (this.#starts[0] as number) < offset) this.#starts[0] = offset;
  }

  /** `[start, end, start, end, …]`: what a cursor record stores. */
  toFlat(): number[] {
    const flat: number[] = new Array(this.#starts.length * 2);
    for (let i = 0; i < this.#starts.length; i++) {
      flat[2 * i] = this.#starts[i] as number;
      flat[2 * i + 1] = this.#ends[i] as number;
    }
    return flat;
  }

  /** The index of the last run starting at or before `offset`, or -1. */
  #runAtOrBefore(offset: number): number {
    let low = 0;
    let high = this.#starts.length - 1;
    // The common case first: an ack at or past the newest run.
    if (high >= 0 && (this.#starts[high] as number) <= offset) return high;
    while (low <= high) {
      const mid = (low + high) >> 1;
      if ((this.#starts[mid] as number) <= offset) low = mid + 1;
      else high = mid - 1;
    }
    return high;
  }
}
