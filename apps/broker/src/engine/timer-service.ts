/** A cancellable one-shot timer. */
export interface TimerHandle {
  cancel(): void;
}

/**
 * Where the engine gets its timers, so that tests can drive minute-long schedules with a manual
 * clock (see `manual-timers.test-support.ts`) while production uses Node's timers.
 */
export interface TimerService {
  /** Call `callback` once, `delayMs` from now. */
  setTimer(delayMs: number, callback: () => void): TimerHandle;
}

/** Node's timers, unref'd so that a pending timer never keeps a finished process alive. */
export const systemTimers: TimerService = {
  setTimer(delayMs, callback) {
    const timer = setTimeout(callback, Math.max(0, delayMs));
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};
