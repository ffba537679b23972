import type { BrokerStore } from '@ricochet/broker';

/**
 * Watches the broker's store through `buildBroker`'s `wrapStore` hook: every call that returns a
 * promise (a queued write, `committed()`, `durable()`) counts as pending until it settles. That is
 * how the kit knows, by an event rather than by waiting, that a commit the broker is about to act
 * on (a failure's retry schedule, a send's receipt) has landed.
 *
 * The wrapper hands back, for every distinct promise, one derived promise that settles the same
 * way; the store gives every write of one transaction the same promise, and callers that rely on
 * that (one callback per commit) see one derived promise per commit as well. A rejection still
 * reaches the caller as it would have.
 */
export class StoreActivity {
  #started = 0;
  #settled = 0;
  #idleWaiters: (() => void)[] = [];
  readonly #derived = new WeakMap<PromiseLike<unknown>, Promise<unknown>>();

  /** Promises the store has handed out so far; a change means the broker wrote or waited. */
  get started(): number {
    return this.#started;
  }

  /** Promises not settled yet. */
  get pending(): number {
    return this.#started - this.#settled;
  }

  /** Resolves once no store promise is pending. */
  whenIdle(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** The store as the broker should see it: the same, with its promises counted. */
  wrap(store: BrokerStore): BrokerStore {
    const wrappers = new Map<PropertyKey, unknown>();
    return new Proxy(store, {
      get: (target, property) => {
        const value: unknown = Reflect.get(target, property, target);
        if (typeof value !== 'function') return value;
        let wrapper = wrappers.get(property);
        if (wrapper === undefined) {
          const method = value as (...args: unknown[]) => unknown;
          wrapper = (...args: unknown[]) => this.#track(method.apply(target, args));
          wrappers.set(property, wrapper);
        }
        return wrapper;
      },
    });
  }

  #track(result: unknown): unknown {
    if (!isPromiseLike(result)) return result;
    const known = this.#derived.get(result);
    if (known) return known;
    this.#started += 1;
    const done = () => {
      this.#settled += 1;
      if (this.pending === 0) for (const wake of this.#idleWaiters.splice(0)) wake();
    };
    const derived = Promise.resolve(result).finally(done);
    this.#derived.set(result, derived);
    return derived;
  }
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
