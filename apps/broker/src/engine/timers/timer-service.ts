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
  /**
   * Call `callback` once the event loop has handled the I/O waiting now: the way a long piece of
   * work yields and goes on, without the millisecond a Node timer of 0 ms takes. Optional: where a
   * service lacks it, {@link soon} uses a timer of 0 ms.
   */
  setImmediate?(callback: () => void): TimerHandle;
}

/** Call `callback` after the I/O waiting now (a 0 ms timer on services without `setImmediate`). */
export function soon(timers: TimerService, callback: () => void): TimerHandle {
  return timers.setImmediate ? timers.setImmediate(callback) : timers.setTimer(0, callback);
}

/** Node's timers, unref'd so that a pending timer never keeps a finished process alive. */
export const systemTimers: TimerService = {
  setTimer(delayMs, callback) {
    const timer = setTimeout(callback, Math.max(0, delayMs));
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
  setImmediate(callback) {
    const immediate = setImmediate(callback);
    immediate.unref();
    return { cancel: () => clearImmediate(immediate) };
  },
};
