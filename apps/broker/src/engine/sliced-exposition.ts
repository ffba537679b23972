import { realWorkClock } from './timers/loop-budget.js';

/** How `GET /metrics` shares the event loop while it renders. */
export interface SliceOptions {
  /**
   * How long one slice of the render may hold the event loop before it lets the loop turn,
   * in milliseconds. @default 5
   */
  readonly sliceMs?: number;
  /**
   * The time, in milliseconds, slices are measured by: how long the render held the loop, as the
   * engine's passes measure theirs. @default realWorkClock
   */
  readonly now?: () => number;
  /** Resolves on a later turn of the event loop, after other I/O had its go. @default setImmediate */
  readonly nextTurn?: () => Promise<void>;
}

/** How many lines are written between two looks at the time (a look is cheap, not free). */
const LINES_PER_LOOK = 256;

const nextTurnOfLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * The Prometheus text exposition, written a slice at a time: once a slice has held the loop for
 * `sliceMs`, {@link line} returns a promise of the next turn, which the writer awaits, so that a
 * scrape of 100,000 groups (several hundred thousand lines) leaves the other clients served in
 * between, instead of holding the loop for seconds. The text is the format prom-client writes:
 * families apart by a blank line, the last line ended by a newline.
 */
export class SlicedExposition {
  readonly #sliceMs: number;
  readonly #now: () => number;
  readonly #nextTurn: () => Promise<void>;
  /** The text of the slices before this one, each one flat string. */
  readonly #slices: string[] = [];
  /**
   * The pieces of the slice being written, joined when it ends: a join makes one flat string,
   * where appending to a string makes a rope that the final join would flatten all at once, in
   * one turn (tens of milliseconds for the 100,000 groups' megabytes).
   */
  #slice: string[] = [];
  #families = 0;
  #linesSinceLook = 0;
  #sliceStartedAt: number;
  /** How many times the render let the loop turn. */
  turns = 0;

  constructor(options: SliceOptions = {}) {
    this.#sliceMs = options.sliceMs ?? 5;
    this.#now = options.now ?? realWorkClock;
    this.#nextTurn = options.nextTurn ?? nextTurnOfLoop;
    this.#sliceStartedAt = this.#now();
  }

  /** Start a family: its HELP and TYPE lines. */
  family(name: string, help: string, type: string): void {
    this.#separate();
    this.#slice.push(`# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}\n`);
  }

  /** A family prom-client rendered (its lines, without the last newline). */
  rendered(text: string): Promise<void> | undefined {
    this.#separate();
    this.#slice.push(text, '\n');
    return this.#pace(LINES_PER_LOOK);
  }

  /**
   * One series' line, `name{labelText} value`. Returns a promise when the slice is over: await it
   * before the next line (a plain `undefined` otherwise, so most lines cost no await).
   */
  line(name: string, labelText: string, value: number): Promise<void> | undefined {
    // Pieces, not a template: the join copies each once, with no string made per line.
    this.#slice.push(name, '{', labelText, '} ', valueText(value), '\n');
    return this.#pace(1);
  }

  /**
   * A unit of work that writes no line (reading a group's numbers before its lines): returns a
   * promise when the slice is over, as {@link line} does.
   */
  tick(): Promise<void> | undefined {
    return this.#pace(1);
  }

  /**
   * The text, as the slices it was written in: one flat string each, about {@link SliceOptions.sliceMs}
   * of writing. Sent one after the other, as a stream, they need no join of the whole text in one
   * turn (the megabytes of 100,000 groups).
   */
  slices(): readonly string[] {
    this.#endSlice();
    return this.#slices;
  }

  #endSlice(): void {
    this.#slices.push(this.#slice.join(''));
    this.#slice = [];
  }

  #separate(): void {
    if (this.#families++ > 0) this.#slice.push('\n');
  }

  #pace(lines: number): Promise<void> | undefined {
    this.#linesSinceLook += lines;
    if (this.#linesSinceLook < LINES_PER_LOOK) return undefined;
    this.#linesSinceLook = 0;
    if (this.#now() - this.#sliceStartedAt < this.#sliceMs) return undefined;
    this.#endSlice();
    this.turns++;
    return this.#nextTurn().then(() => {
      this.#sliceStartedAt = this.#now();
    });
  }
}

/** A sample value as the text format writes it (prom-client's spelling of NaN and the infinities). */
function valueText(value: number): string {
  if (Number.isNaN(value)) return 'Nan';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return `${value}`;
}

/** A HELP text escaped for the text format: backslash and newline. */
function escapeHelp(help: string): string {
  return help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}
