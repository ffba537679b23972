import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import type { BrokerConfig } from '../config.js';
import type { BrokerStore } from './broker-store.js';
import { openLmdbStore } from './lmdb-store.js';
import { openPostgresStore } from './postgres/postgres-store.js';
import type { StandbyFeedOptions } from './postgres/standby-feed.js';
import { LeaseGate, type LeaseHolder } from './postgres/store-lease.js';
import { redactStoreUrl } from './store-url.js';

/** What the broker is told about its store while it opens and runs. */
export interface OpenStoreHooks {
  readonly onWriteError: (error: unknown) => void;
  /** The PostgreSQL store is held by another broker: this one waits (a standby). */
  readonly onWaitingForLease: (holder: LeaseHolder) => void;
  /** The PostgreSQL store stopped taking writes for good (taken over, or unreachable too long). */
  readonly onLost: (error: unknown) => void;
  /** The PostgreSQL store's fence refused a transaction: another broker took the lease. @default nothing */
  readonly onFenced?: () => void;
  /** A standby loaded its local copy of the PostgreSQL store, which it then keeps up to date. */
  readonly onWarmCopyLoaded: (elapsedMs: number) => void;
  /** A standby could not bring its local copy of the PostgreSQL store up to date (it tries again). */
  readonly onWarmCopyError: (error: unknown) => void;
  /**
   * The feed between a PostgreSQL store's owner and its standbys (`postgres/standby-feed.ts`), in
   * a cluster (its requests carry the peer token). @default none: standbys read every change from
   * the database
   */
  readonly standbyFeed?: StandbyFeedOptions;
}

/**
 * Open the store `config.store` names: the embedded LMDB store in `dataDir` by default, or a
 * PostgreSQL database, whose local copy then lives in `dataDir/postgres-cache`.
 */
export async function openStore(config: BrokerConfig, hooks: OpenStoreHooks): Promise<BrokerStore> {
  return openQueue(config, hooks, 0);
}

/**
 * Open every queue of the store (`config.storeQueues`; one for the embedded store), all at once,
 * each waiting for its lease and keeping its copy warm meanwhile; but the queues past 0 take their
 * lease only once this broker owns queue 0. A standby waits on queue 0, and whoever owns it owns
 * the others too (its owner gives them all back together), so two brokers never hold some queues
 * each. Until queues are spread over brokers (DESIGN.md §9), one broker owns them all.
 */
export async function openStores(config: BrokerConfig, hooks: OpenStoreHooks): Promise<BrokerStore[]> {
  if (config.storeQueues === 1) return [await openQueue(config, hooks, 0)];
  const ownsFirst = new LeaseGate();
  const abandon = new AbortController();
  // One line for the standby's copy of the whole store, once every queue's is warm.
  let warmQueues = 0;
  const queueHooks: OpenStoreHooks = {
    ...hooks,
    onWaitingForLease: () => {},
    onWarmCopyLoaded: (elapsedMs) => {
      warmQueues++;
      if (warmQueues === config.storeQueues) hooks.onWarmCopyLoaded(elapsedMs);
    },
  };
  const opening = Array.from({ length: config.storeQueues }, (_, queue) =>
    queue === 0
      ? openQueue(config, { ...queueHooks, onWaitingForLease: hooks.onWaitingForLease }, 0).then((store) => {
          ownsFirst.open();
          return store;
        })
      : openQueue(config, queueHooks, queue, { leaseGate: ownsFirst, signal: abandon.signal }),
  );
  // Should queue 0 fail to open, the others stop waiting for a lease they may never take.
  opening[0]?.catch(() => abandon.abort());
  const results = await Promise.allSettled(opening);
  const opened = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failed = results.find((result) => result.status === 'rejected');
  if (failed !== undefined) {
    await Promise.allSettled(opened.map((store) => store.close()));
    throw failed.reason;
  }
  return opened;
}

/**
 * Open one queue of the store (`openStores` opens them all): for a PostgreSQL store, wait for its
 * lease (taken only while `waiting.leaseGate` is open) while keeping a warm copy, until
 * `waiting.signal` aborts.
 */
export function openStoreQueue(
  config: BrokerConfig,
  hooks: OpenStoreHooks,
  queue: number,
  waiting: { readonly leaseGate?: LeaseGate; readonly signal?: AbortSignal } = {},
): Promise<BrokerStore> {
  return openQueue(config, hooks, queue, waiting);
}

async function openQueue(
  config: BrokerConfig,
  hooks: OpenStoreHooks,
  queue: number,
  waiting: { readonly leaseGate?: LeaseGate; readonly signal?: AbortSignal } = {},
): Promise<BrokerStore> {
  if (config.store === undefined) {
    return openLmdbStore({
      path: config.dataDir,
      flushPolicy: config.flushPolicy,
      onWriteError: hooks.onWriteError,
    });
  }
  return openPostgresStore({
    url: config.store,
    queue,
    // Side by side, not nested: each is removed and rebuilt when its queue opens.
    cacheDir: join(config.dataDir, queue === 0 ? 'postgres-cache' : `postgres-cache-q${queue}`),
    owner: brokerIdentity(config),
    flushPolicy: config.flushPolicy,
    leaseTtlMs: config.storeLeaseMs,
    ...(config.advertiseUrl === undefined ? {} : { advertiseUrl: config.advertiseUrl }),
    ...(config.advertiseTcpUrl === undefined ? {} : { advertiseTcpUrl: config.advertiseTcpUrl }),
    onWriteError: hooks.onWriteError,
    onWaitingForLease: hooks.onWaitingForLease,
    onLost: hooks.onLost,
    ...(hooks.onFenced ? { onFenced: hooks.onFenced } : {}),
    onWarmCopyLoaded: hooks.onWarmCopyLoaded,
    onWarmCopyError: hooks.onWarmCopyError,
    ...(hooks.standbyFeed ? { standbyFeed: hooks.standbyFeed } : {}),
    ...waiting,
  });
}

/**
 * This broker's name on a shared store: in the lease rows it takes and in the broker registry. The
 * same host and data directory is the same broker: restarted, it takes its lease back at once.
 */
export function brokerIdentity(config: Pick<BrokerConfig, 'dataDir'>): string {
  return `${hostname()}:${resolve(config.dataDir)}`;
}

/** The store's URL for log lines: without a password. */
export function describeStore(config: Pick<BrokerConfig, 'store' | 'dataDir'>): string {
  if (config.store === undefined) return `data in ${config.dataDir}`;
  return `store ${redactStoreUrl(config.store)}`;
}
