/**
 * The only source of time in `@ricochet/core`. Everything that needs "now" takes a `Clock`,
 * so tests can walk a two-hour retry schedule in microseconds with a {@link ManualClock}.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

/** The wall clock of the running process. */
export const systemClock: Clock = {
  now: () => Date.now(),
};

/**
 * A clock that moves only when told to; for tests and simulations.
 *
 * @example
 * const clock = new ManualClock(0);
 * clock.advanceBy(10_000);
 * clock.now(); // 10_000
 */
export class ManualClock implements Clock {
  #nowMs: number;

  /** @param startMs - the initial time in epoch milliseconds. @default 0 */
  constructor(startMs = 0) {
    this.#nowMs = startMs;
  }

  now(): number {
    return this.#nowMs;
  }

  /**
   * Move time forward.
   * @throws RangeError when `ms` is negative or not finite: time never runs backwards.
   */
  advanceBy(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`advanceBy expects ms >= 0, got ${ms}`);
    this.#nowMs += ms;
  }

  /**
   * Jump to an absolute time, never earlier than the current one.
   * @throws RangeError when `ms` is before the current time.
   */
  set(ms: number): void {
    if (!Number.isFinite(ms) || ms < this.#nowMs) {
      throw new RangeError(`set expects a time >= ${this.#nowMs}, got ${ms}`);
    }
    this.#nowMs = ms;
  }
}
