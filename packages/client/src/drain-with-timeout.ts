/**
 * Wait until `idle` settles or `timeoutMs` passes, whichever comes first: how a client lets work
 * in flight finish as it closes without waiting longer than its owner allows. The timer is cleared
 * as soon as `idle` wins, so a quick drain leaves nothing behind to keep the process alive.
 *
 * @param idle - settles once nothing is in flight any more (see {@link IdleWaiters}); a rejection
 *   counts as settled.
 * @returns `true` when `idle` settled first, `false` when the time ran out.
 */
export function drainWithTimeout(idle: PromiseLike<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  const drained = Promise.resolve(idle).then(
    () => true,
    () => true,
  );
  return Promise.race([drained, timedOut]).finally(() => clearTimeout(timer));
}

/**
 * The callers waiting for some work in progress (requests in flight, sends pending, listeners
 * running) to reach none. Its owner calls {@link check} whenever the work shrinks.
 */
export class IdleWaiters {
  readonly #isIdle: () => boolean;
  #waiters: (() => void)[] = [];

  /** @param isIdle - whether no work is in progress now. */
  constructor(isIdle: () => boolean) {
    this.#isIdle = isIdle;
  }

  /** Resolves once no work is in progress: at once when there is none now. */
  whenIdle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Wake every waiter if no work is in progress any more. */
  check(): void {
    if (this.#waiters.length === 0 || !this.#isIdle()) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}
