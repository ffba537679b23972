import type { ManualClock } from '@ricochet/core';
import type { TimerHandle, TimerService } from './timer-service.js';

/**
 * Timers driven by a {@link ManualClock}: `advanceBy` moves the clock and fires, in time order,
 * every timer that falls due on the way, letting promises settle between them.
 */
export class ManualTimers implements TimerService {
  readonly #clock: ManualClock;
  #timers: { dueAtMs: number; callback: () => void; cancelled: boolean; order: number }[] = [];
  #order = 0;

  constructor(clock: ManualClock) {
    this.#clock = clock;
  }

  setTimer(delayMs: number, callback: () => void): TimerHandle {
    const timer = {
      dueAtMs: this.#clock.now() + Math.max(0, delayMs),
      callback,
      cancelled: false,
      order: this.#order++,
    };
    this.#timers.push(timer);
    return { cancel: () => (timer.cancelled = true) };
  }

  /** The time of the next pending timer, if any. */
  nextDueAtMs(): number | undefined {
    const pending = this.#timers.filter((timer) => !timer.cancelled);
    return pending.length === 0 ? undefined : Math.min(...pending.map((timer) => timer.dueAtMs));
  }

  /** Move the clock forward by `ms`, firing due timers in order. */
  async advanceBy(ms: number, settle: () => Promise<void>): Promise<void> {
    const targetMs = this.#clock.now() + ms;
    for (let guard = 0; guard < 100_000; guard++) {
      this.#timers = this.#timers.filter((timer) => !timer.cancelled);
      const due = this.#timers
        .filter((timer) => timer.dueAtMs <= targetMs)
        .sort((a, b) => a.dueAtMs - b.dueAtMs || a.order - b.order)[0];
      if (!due) break;
      if (due.dueAtMs > this.#clock.now()) this.#clock.set(due.dueAtMs);
      due.cancelled = true;
      due.callback();
      await settle();
    }
    if (targetMs > this.#clock.now()) this.#clock.set(targetMs);
    await settle();
  }
}
