/**
 * Rates from counters: the dashboard reads the broker's totals every couple of seconds and keeps
 * the last 15 minutes of readings in memory (nothing is stored server-side for it). A rate is the
 * difference of two readings over the time between them; a counter that went down (the broker
 * restarted and counts from 0 again) gives no rate for that interval rather than a negative one.
 */
export const HISTORY_MS = 15 * 60_000;

export interface Reading<K extends string> {
  readonly atMs: number;
  readonly totals: Readonly<Record<K, number>>;
}

/** One point of a rate series: per second over the interval ending at `atMs`. */
export interface RatePoint {
  readonly atMs: number;
  readonly perSecond: number;
}

/** Readings of named counters for one series key (a topic or a group), bounded to {@link HISTORY_MS}. */
export class CounterHistory<K extends string> {
  readonly #readings: Reading<K>[] = [];

  add(reading: Reading<K>): void {
    const last = this.#readings.at(-1);
    if (last && reading.atMs <= last.atMs) return;
    this.#readings.push(reading);
    const horizon = reading.atMs - HISTORY_MS;
    // Keep one reading older than the window, so the first rate inside it has a start.
    while (this.#readings.length > 2 && (this.#readings[1]?.atMs ?? Number.POSITIVE_INFINITY) < horizon)
      this.#readings.shift();
  }

  /** The rate of `counter` over each interval between consecutive readings. */
  series(counter: K): RatePoint[] {
    const points: RatePoint[] = [];
    for (let i = 1; i < this.#readings.length; i++) {
      const before = this.#readings[i - 1];
      const after = this.#readings[i];
      if (!before || !after) continue;
      const delta = (after.totals[counter] ?? 0) - (before.totals[counter] ?? 0);
      if (delta < 0) continue;
      points.push({ atMs: after.atMs, perSecond: (delta * 1_000) / (after.atMs - before.atMs) });
    }
    return points;
  }

  /** The latest rate of `counter`, or `undefined` before two readings. */
  current(counter: K): number | undefined {
    return this.series(counter).at(-1)?.perSecond;
  }
}

/** A rate for a table cell: `0`, `0.5`, `12`, `1.2k`. */
export function formatRate(perSecond: number | undefined): string {
  if (perSecond === undefined) return '–';
  if (perSecond >= 1_000) return `${(perSecond / 1_000).toFixed(1)}k`;
  if (perSecond >= 10 || perSecond === 0) return String(Math.round(perSecond));
  return perSecond.toFixed(1);
}
