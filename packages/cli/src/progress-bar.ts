import type { TextSink } from './cli-io.js';

/**
 * Shows how far a job of `total` steps got. On a terminal: one line redrawn in place
 * (`[#####-----] 5/10 50%`). Elsewhere (a pipe, a log file, a CI job): a plain line each time the
 * count changes, never more than one line a second except the last, so a log stays readable.
 */
export class ProgressReporter {
  readonly #sink: TextSink;
  readonly #label: string;
  readonly #total: number;
  readonly #now: () => number;
  #lastShown = -1;
  #lastPlainAtMs = Number.NEGATIVE_INFINITY;

  constructor(sink: TextSink, label: string, total: number, now: () => number = () => performance.now()) {
    this.#sink = sink;
    this.#label = label;
    this.#total = total;
    this.#now = now;
  }

  /** Report `done` of the total. */
  update(done: number): void {
    const clamped = Math.max(0, Math.min(this.#total, done));
    if (this.#sink.isTTY === true) {
      if (clamped !== this.#lastShown) this.#sink.write(`\r${this.#bar(clamped)}`);
    } else if (clamped !== this.#lastShown) {
      const nowMs = this.#now();
      if (clamped === this.#total || nowMs - this.#lastPlainAtMs >= 1_000) {
        this.#sink.write(`${this.#label}: ${clamped}/${this.#total}\n`);
        this.#lastPlainAtMs = nowMs;
      } else {
        return; // not shown: the next change (or the last) will be
      }
    }
    this.#lastShown = clamped;
  }

  /** End the progress display (the terminal's line is finished). */
  finish(): void {
    if (this.#sink.isTTY === true) this.#sink.write('\n');
  }

  #bar(done: number): string {
    const fraction = this.#total === 0 ? 1 : done / this.#total;
    const width = Math.max(10, Math.min(40, (this.#sink.columns ?? 80) - this.#label.length - 30));
    const filled = Math.round(fraction * width);
    const percent = `${Math.floor(fraction * 100)}%`.padStart(4);
    return `${this.#label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${done}/${this.#total} ${percent}`;
  }
}
