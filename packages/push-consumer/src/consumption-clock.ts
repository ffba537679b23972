/** A timer armed on a {@link ConsumptionClock}. */
export interface ClockTimer {
  cancel(): void;
}

/**
 * What times a push consumer's consumption timeout: a time in ms and one-shot timers on the same
 * scale. A test can pass a virtual clock here (`@ricochet/testing`'s `broker.clock` is one), so
 * that a listener's timeout passes when the test moves its clock, as the broker's own does.
 */
export interface ConsumptionClock {
  /** The current time in ms; only differences are used, so any origin will do. */
  now(): number;
  /** Call `callback` once, `delayMs` from now. */
  setTimer(delayMs: number, callback: () => void): ClockTimer;
}

/** The process's own clock: `performance.now()` and `setTimeout`. */
export const systemConsumptionClock: ConsumptionClock = {
  now: () => performance.now(),
  setTimer(delayMs, callback) {
    const timer = setTimeout(callback, delayMs);
    return { cancel: () => clearTimeout(timer) };
  },
};
