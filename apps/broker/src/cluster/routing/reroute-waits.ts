import { type Clock, systemClock } from '@ricochet/core';
import { BrokerError, ERROR_CODES } from '@ricochet/protocol';
import { systemTimers, type TimerService } from '../../engine/index.js';
import type { RoutedQueue } from './routed-queue.js';

/**
 * How long a request that met a queue between owners waits for the queue's next routes: at most
 * `maxReroutes` times made again, each wait at most `waitMs`, all of them within `budgetMs`. A
 * wait that ends without a new route ends the tries: what the last one met stands, a `503`.
 */
export interface RerouteBound {
  /** How many times the request is made again, each on a next route. */
  readonly maxReroutes: number;
  /** The longest one wait for a next route, in ms. */
  readonly waitMs: number;
  /** The longest all the waits of one request together, in ms. */
  readonly budgetMs: number;
}

/**
 * A send's: up to 3 waits of 1 s. The cluster's view is read four times per lease, every 250 ms
 * at most, so a handover under way routes the queue anew well within a wait; one that is not (an
 * owner crashed, its lease still running) answers `503` after it, which producers retry at once
 * (R2): a send is held a few seconds at most, far within its own timeout.
 */
export const SEND_REROUTES: RerouteBound = Object.freeze({ maxReroutes: 3, waitMs: 1_000, budgetMs: 3_000 });

/**
 * An admin call's (a write, or a read whose owner went away mid-call): up to 5 s in all, however
 * often the queue is routed anew meanwhile (a bound on the count too, 8). Longer than a send's:
 * an operator's request is not retried by a producer, and a handover right after brokers start,
 * while they are still busy starting, was measured past a send's 1 s; shorter than an admin
 * client's timeout (the CLI's 10 s) and than a forwarding broker's wait for an owner's answer
 * (`ADMIN_CALL_TIMEOUT_MS`, 10 s).
 */
export const ADMIN_REROUTES: RerouteBound = Object.freeze({ maxReroutes: 8, waitMs: 5_000, budgetMs: 5_000 });

/**
 * One try of a request on queue `routed`: resolves `true` when it met the queue between owners
 * (all of it, or a part, such as some messages of a send), to be made again on the next route.
 */
export type RouteAttempt = (routed: RoutedQueue) => Promise<boolean>;

/** {@link RerouteWaits.onEachRoute}: how the fan-out of a send rides through a queue's moves. */
export type OnEachRoute = (queue: number, attempt: RouteAttempt, bound: RerouteBound) => Promise<void>;

/** Whether an error says the queue is between owners, or its owner could not be reached: `503`. */
export function isBetweenOwners(error: unknown): boolean {
  return error instanceof BrokerError && error.code === ERROR_CODES.BROKER_UNAVAILABLE.code;
}

/**
 * The requests of a `PartitionRouter` that met a queue between owners, waiting for the queue's
 * next route: {@link onEachRoute} makes a request again on each next route (sends, admin calls
 * through {@link onOwner}), {@link rerouted} wakes the waits of one queue, {@link stop} all of
 * them for good (draining).
 */
export class RerouteWaits {
  readonly #current: (queue: number) => RoutedQueue | undefined;
  /** The broker's clock and timers: the waits and their budget run on them, as every broker timer does. */
  readonly #clock: Clock;
  readonly #timers: TimerService;
  readonly #waiters = new Map<number, Set<() => void>>();
  #stopped = false;

  /** @param current - queue `queue` as routed now. */
  constructor(
    current: (queue: number) => RoutedQueue | undefined,
    time: { readonly clock?: Clock | undefined; readonly timers?: TimerService | undefined } = {},
  ) {
    this.#current = current;
    this.#clock = time.clock ?? systemClock;
    this.#timers = time.timers ?? systemTimers;
  }

  /**
   * Make `attempt` on queue `queue` as routed now, and again on the queue's next route each time
   * it met the queue between owners, after {@link until}, within `bound`.
   */
  readonly onEachRoute: OnEachRoute = async (queue, attempt, bound) => {
    const deadlineMs = this.#clock.now() + bound.budgetMs;
    let routed = this.#routed(queue);
    let again = await attempt(routed);
    for (let reroutes = 0; again && reroutes < bound.maxReroutes; reroutes++) {
      const waitMs = Math.min(bound.waitMs, deadlineMs - this.#clock.now());
      if (waitMs <= 0 || !(await this.until(queue, routed, waitMs))) return;
      routed = this.#routed(queue);
      again = await attempt(routed);
    }
  };

  /**
   * An admin call of queue `queue` (a topic or group write, or a read), made on its owner: on the
   * queue's next route when it met the queue between owners or its owner went away mid-call, as a
   * send is ({@link onEachRoute}), within
   * {@link ADMIN_REROUTES}. Resolves with the call's answer; rejects with its error, the last
   * `503` once the waits are spent.
   */
  async onOwner<T>(queue: number, call: (routed: RoutedQueue) => Promise<T>): Promise<T> {
    let outcome: PromiseSettledResult<T> | undefined;
    await this.onEachRoute(
      queue,
      async (routed) => {
        try {
          outcome = { status: 'fulfilled', value: await call(routed) };
          return false;
        } catch (reason) {
          outcome = { status: 'rejected', reason };
          return isBetweenOwners(reason);
        }
      },
      ADMIN_REROUTES,
    );
    // `onEachRoute` makes the first attempt whatever happens, so there is an outcome.
    const settled = outcome as PromiseSettledResult<T>;
    if (settled.status === 'rejected') throw settled.reason;
    return settled.value;
  }

  /**
   * An admin call made in each of `queues` queues, on each queue's owner ({@link onOwner}): a
   * write right after brokers start or leave waits for the queues it meets between owners, and a
   * read whose owner went away mid-call asks the queue's next route, instead of being answered
   * `503`. Resolves with each queue's answer, in queue order.
   */
  onEveryOwner<T>(queues: number, call: (routed: RoutedQueue) => Promise<T>): Promise<T[]> {
    return Promise.all(Array.from({ length: queues }, (_, queue) => this.onOwner(queue, call)));
  }

  /**
   * Resolves `true` once `queue` is routed away from `routed` (at once if it is already), `false`
   * after `waitMs` or when stopped.
   */
  until(queue: number, routed: RoutedQueue, waitMs: number): Promise<boolean> {
    if (this.#current(queue) !== routed) return Promise.resolve(true);
    if (this.#stopped) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const waiters = this.#waiters.get(queue) ?? new Set<() => void>();
      this.#waiters.set(queue, waiters);
      const wake = () => {
        timer.cancel();
        waiters.delete(wake);
        resolve(this.#current(queue) !== routed);
      };
      const timer = this.#timers.setTimer(waitMs, wake);
      waiters.add(wake);
    });
  }

  /** Queue `queue` was routed anew: its waiting requests go on. */
  rerouted(queue: number): void {
    for (const wake of this.#waiters.get(queue) ?? []) wake();
    this.#waiters.delete(queue);
  }

  /** Draining or closing: the waiting requests are answered now, and none waits again. */
  stop(): void {
    this.#stopped = true;
    for (const waiters of this.#waiters.values()) for (const wake of waiters) wake();
    this.#waiters.clear();
  }

  #routed(queue: number): RoutedQueue {
    const routed = this.#current(queue);
    if (routed === undefined) throw new RangeError(`no queue ${queue}`);
    return routed;
  }
}
