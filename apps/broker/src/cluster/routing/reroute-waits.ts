import type { RoutedQueue } from './routed-queue.js';

/**
 * How long a send that met a queue between owners waits for the queue's next route, in ms, each
 * time (at most `MAX_REROUTES` times, `queue-fan-out.ts`): the cluster's view is read four times
 * per lease, every 250 ms at most, so a handover under way routes the queue anew well within it;
 * one that is not (an owner crashed, its lease still running) answers `503` after it, which
 * clients retry.
 */
export const REROUTE_WAIT_MS = 1_000;

/**
 * The sends of a `PartitionRouter` waiting for a queue's next route: {@link until} waits,
 * {@link rerouted} wakes the waits of one queue, {@link stop} all of them for good (draining).
 */
export class RerouteWaits {
  readonly #current: (queue: number) => RoutedQueue | undefined;
  readonly #waiters = new Map<number, Set<() => void>>();
  #stopped = false;

  /** @param current - queue `queue` as routed now. */
  constructor(current: (queue: number) => RoutedQueue | undefined) {
    this.#current = current;
  }

  /**
   * Resolves `true` once `queue` is routed away from `routed` (at once if it is already), `false`
   * after {@link REROUTE_WAIT_MS} or when stopped.
   */
  readonly until = (queue: number, routed: RoutedQueue): Promise<boolean> => {
    if (this.#current(queue) !== routed) return Promise.resolve(true);
    if (this.#stopped) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const waiters = this.#waiters.get(queue) ?? new Set<() => void>();
      this.#waiters.set(queue, waiters);
      const wake = () => {
        clearTimeout(timer);
        waiters.delete(wake);
        resolve(this.#current(queue) !== routed);
      };
      const timer = setTimeout(wake, REROUTE_WAIT_MS);
      waiters.add(wake);
    });
  };

  /** Queue `queue` was routed anew: its waiting sends go on. */
  rerouted(queue: number): void {
    for (const wake of this.#waiters.get(queue) ?? []) wake();
    this.#waiters.delete(queue);
  }

  /** Draining or closing: the waiting sends are answered now, and none waits again. */
  stop(): void {
    this.#stopped = true;
    for (const waiters of this.#waiters.values()) for (const wake of waiters) wake();
    this.#waiters.clear();
  }
}
