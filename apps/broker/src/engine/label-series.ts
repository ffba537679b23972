/** One series of a {@link LabelSeries}: its label values, their text in the exposition, its value. */
interface Series {
  readonly values: readonly string[];
  /** `group="g"` (or `group="g",reason="rate"`): escaped once, when the series first appears. */
  readonly labelText: string;
  value: number;
}

/**
 * The series of one metric family with labels, by their label values: what the message path and
 * the group lifecycle count, kept here rather than in prom-client (whose `inc` hashes the label
 * object on every call, a few per cent of the broker's CPU on a push stream) and rendered from
 * here by `GET /metrics` in slices (`sliced-exposition.ts`). Each series' label text is escaped
 * once, when it first appears: a scrape of 100,000 groups only joins strings it already has.
 *
 * A series is named by one string key: its one label value, or {@link seriesKey} of several.
 */
export class LabelSeries<TLabel extends string> {
  readonly labelNames: readonly TLabel[];
  readonly #series = new Map<string, Series>();

  constructor(labelNames: readonly TLabel[]) {
    this.labelNames = labelNames;
  }

  /** Add `count` to the series `key`, created at 0 with `values` (default: `[key]`) when new. */
  add(key: string, count: number, values?: readonly string[]): void {
    const series = this.#series.get(key);
    if (series !== undefined) series.value += count;
    else this.#create(key, values ?? [key], count);
  }

  /** Set the series `key` to `value`, created with `values` (default: `[key]`) when new. */
  set(key: string, value: number, values?: readonly string[]): void {
    const series = this.#series.get(key);
    if (series !== undefined) series.value = value;
    else this.#create(key, values ?? [key], value);
  }

  /** The value of the series `key`, 0 when it has none. */
  get(key: string): number {
    return this.#series.get(key)?.value ?? 0;
  }

  /** Every series, in the order they appeared. Safe across turns: a series added meanwhile comes too. */
  values(): IterableIterator<Series> {
    return this.#series.values();
  }

  /** Every series with its labels as an object, for prom-client's `collect` (tests read through it). */
  *labelled(): Iterable<{ readonly labels: Record<TLabel, string>; readonly value: number }> {
    for (const { values, value } of this.#series.values()) {
      const labels = {} as Record<TLabel, string>;
      this.labelNames.forEach((name, index) => {
        labels[name] = values[index] ?? '';
      });
      yield { labels, value };
    }
  }

  #create(key: string, values: readonly string[], value: number): void {
    this.#series.set(key, { values, labelText: labelTextOf(this.labelNames, values), value });
  }
}

/**
 * A label's text (`group="…"`) per value, escaped once: for the series read anew at each scrape
 * (a group's inflight and backlog). Never emptied: the values are names that are never removed
 * (groups), so the map does not outgrow what it names.
 */
export class LabelTexts {
  readonly #labelName: string;
  readonly #texts = new Map<string, string>();

  constructor(labelName: string) {
    this.#labelName = labelName;
  }

  of(value: string): string {
    let text = this.#texts.get(value);
    if (text === undefined) {
      text = labelTextOf([this.#labelName], [value]);
      this.#texts.set(value, text);
    }
    return text;
  }
}

/** The one key of a series with several label values (a NUL cannot be in a name or a reason). */
export function seriesKey(...values: readonly string[]): string {
  return values.join('\u0000');
}

/** `name="value",…` as the Prometheus text format writes labels, values escaped. */
export function labelTextOf(labelNames: readonly string[], values: readonly string[]): string {
  return labelNames.map((name, index) => `${name}="${escapeLabelValue(values[index] ?? '')}"`).join(',');
}

/** A label value escaped for the text format: backslash, newline and double quote. */
function escapeLabelValue(value: string): string {
  return /[\\\n"]/.test(value)
    ? value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
    : value;
}
