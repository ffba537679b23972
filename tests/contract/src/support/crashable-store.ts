import {
  type Broker,
  type BrokerAddress,
  type BrokerStore,
  buildBroker,
  type TimerService,
} from '@ricochet/broker';
import { storeFor } from './test-store.js';

/** The store methods that queue a write; every other method reads. */
const WRITE_METHODS: ReadonlySet<string> = new Set([
  'putTopic',
  'putGroup',
  'putCursor',
  'putGroupCounters',
  'putBroadcastInstance',
  'deleteBroadcastInstance',
  'appendMessage',
  'putMessageLocation',
  'putDelivery',
  'deleteDelivery',
  'putSchedule',
  'deleteSchedule',
  'appendHistory',
] satisfies (keyof BrokerStore)[]);

/** A write the broker queued, as the crash tests watch for it. */
export interface QueuedWrite {
  readonly method: string;
  readonly args: readonly unknown[];
}

const never = new Promise<never>(() => {});

/**
 * Fault injection around the broker's real store (`buildBroker`'s `wrapStore` hook), to crash an
 * in-process broker at a chosen point, the same way on every run:
 *
 * - {@link holdCommits}: `committed()` and `durable()` stop resolving, as when a commit is slow to
 *   reach the disk. Sends, acks and nacks stay unanswered; writes still reach the store in the
 *   order they are queued.
 * - {@link crash}: the process is dead from here on. No later write reaches the store, and
 *   nothing the broker promised becomes true: held commits never resolve. Whatever was queued
 *   before commits when the broker closes the store — the worst case for a write queued too early,
 *   since all of it survives.
 * - {@link written}: an event for a write being queued, so a test can crash right after it.
 */
export class CrashableStore {
  #holding = false;
  #crashed = false;
  readonly #held: (() => void)[] = [];
  readonly #watchers: { readonly matches: (write: QueuedWrite) => boolean; readonly resolve: () => void }[] =
    [];

  /** The hook for `buildBroker(config, { wrapStore })`. */
  readonly wrap = (store: BrokerStore): BrokerStore =>
    new Proxy(store, {
      get: (target, property, receiver) => {
        const value: unknown = Reflect.get(target, property, receiver);
        if (typeof value !== 'function') return value;
        const method = String(property);
        if (WRITE_METHODS.has(method)) {
          return (...args: unknown[]) => {
            if (this.#crashed) return never;
            const queued = value.apply(target, args);
            this.#notify({ method, args });
            return queued;
          };
        }
        if (method === 'committed' || method === 'durable') {
          return () => this.#afterHold(() => value.apply(target, []));
        }
        return value.bind(target);
      },
    });

  /** From now on, no commit is reported: the ones asked for wait, and never resolve after {@link crash}. */
  holdCommits(): void {
    this.#holding = true;
  }

  /** Cut the store off: nothing queued after this point is ever written. */
  crash(): void {
    this.#crashed = true;
    this.#held.length = 0;
  }

  /** Resolves once the broker queues a write that `matches`. */
  written(matches: (write: QueuedWrite) => boolean): Promise<void> {
    return new Promise((resolve) => this.#watchers.push({ matches, resolve }));
  }

  #afterHold(commit: () => Promise<void>): Promise<void> {
    if (this.#crashed) return never;
    if (!this.#holding) return commit();
    return new Promise<void>((resume) => this.#held.push(resume)).then(commit);
  }

  #notify(write: QueuedWrite): void {
    for (const watcher of [...this.#watchers]) {
      if (!watcher.matches(write)) continue;
      this.#watchers.splice(this.#watchers.indexOf(watcher), 1);
      watcher.resolve();
    }
  }
}

/**
 * A broker on `dataDir` (and, in the `contract-postgres` project, its database) whose store
 * `crash` wraps, listening on 127.0.0.1:0 with no drain: the first life of a crash test. The test
 * closes it after `crash.crash()`, then starts a plain broker on the same directory.
 */
export async function startCrashableBroker(
  dataDir: string,
  crash: CrashableStore,
  hooks: { readonly timers?: TimerService } = {},
): Promise<{ readonly broker: Broker } & BrokerAddress> {
  const broker = await buildBroker(
    {
      ...(await storeFor(dataDir)),
      host: '127.0.0.1',
      port: 0,
      logLevel: 'silent',
      dataDir,
      drainTimeoutMs: 0,
    },
    { ...hooks, wrapStore: crash.wrap },
  );
  return { broker, ...(await broker.listen()) };
}
