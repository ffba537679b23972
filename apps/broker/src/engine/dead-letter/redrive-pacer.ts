import type { TimerHandle, TimerService } from '../timers/timer-service.js';

/**
 * D2's rate cap on a redrive: the items go in slices, every `intervalMs` as many as the rate allows
 * (the first slice at once), so a large DLQ never floods a group, or the event loop, at once.
 * One pacer serves every redrive of its owner, and stops them all on {@link close}.
 */
export class RedrivePacer {
  readonly #timers: TimerService;
  readonly #running = new Set<TimerHandle>();

  constructor(timers: TimerService) {
    this.#timers = timers;
  }

  /** Hand `items` to `redrive` a slice at a time, at most `ratePerSecond` per second. */
  pace<T>(items: readonly T[], ratePerSecond: number, redrive: (slice: readonly T[]) => void): void {
    const intervalMs = Math.max(10, Math.ceil(1_000 / ratePerSecond));
    const perSlice = Math.max(1, Math.floor((ratePerSecond * intervalMs) / 1_000));
    let next = 0;
    const slice = () => {
      redrive(items.slice(next, next + perSlice));
      next += perSlice;
      if (next >= items.length) return;
      const timer = this.#timers.setTimer(intervalMs, () => {
        this.#running.delete(timer);
        slice();
      });
      this.#running.add(timer);
    };
    if (items.length > 0) slice();
  }

  /** Stop every redrive in progress (the broker is closing); what is left stays in the DLQ. */
  close(): void {
    for (const timer of this.#running) timer.cancel();
    this.#running.clear();
  }
}
