import { rmSync } from 'node:fs';
import type { BrokerStore } from '../broker-store.js';
import { openLmdbStore } from '../lmdb-store.js';
import postgres from './driver.js';
import { LivenessLock } from './liveness-lock.js';
import { PostgresStore } from './postgres-broker-store.js';
import { preparePostgresSchema } from './postgres-schema.js';
import type { PostgresStoreOptions } from './postgres-store-options.js';
import { queueConnection } from './queue-schema.js';
import { type StandingBy, standBy } from './standing-by.js';
import { StoreLease } from './store-lease.js';
import { WarmCopy } from './warm-copy.js';

export type { PostgresStoreOptions } from './postgres-store-options.js';

/**
 * A store on PostgreSQL (DESIGN.md §9): the tables are the durable state, this broker owns them
 * through a lease whose epoch fences every transaction, and a local LMDB scratch copy answers the
 * seam's synchronous reads.
 *
 * Opening takes the lease (waiting while another broker holds it: a standby), then loads every
 * table into a fresh local copy. Each write becomes a row of the turn's batch, which
 * `write-pipeline.ts` commits, fenced and in order, then replays on the local copy before its
 * promise resolves (rule 4: reads see committed data, and what the engine keeps in memory until a
 * write resolves is readable afterwards). See "The store seam" in docs/architecture.md.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<BrokerStore> {
  const flushPolicy = options.flushPolicy ?? 'fsync';
  const ttlMs = options.leaseTtlMs ?? 10_000;
  const queue = options.queue ?? 0;
  const inQueue = queueConnection(options.url, queue);
  const common = { onnotice: () => {}, connect_timeout: 10, max_lifetime: null, idle_timeout: 0 } as const;
  // One connection for every write transaction: PostgreSQL then commits them in the order sent.
  // Each transaction holds the lease row's lock from its fence to its commit; a broker paused in
  // between (SIGSTOP, a frozen VM: its kernel keeps the connection up) would hold it, and block
  // every broker's take of the lease, for as long as the pause. Past the lease's TTL idle inside
  // a transaction, PostgreSQL ends the session instead: the lock goes, another broker takes the
  // lease, and the woken broker's retry of that transaction is refused by the fence.
  const writer = postgres(options.url, {
    ...common,
    max: 1,
    connection: {
      ...inQueue,
      synchronous_commit: flushPolicy === 'fsync' ? 'on' : 'off',
      idle_in_transaction_session_timeout: ttlMs,
    },
  });
  const reader = postgres(options.url, { ...common, max: 2, connection: inQueue });
  const liveness = LivenessLock.open(options.url, { queue });
  let mirror: BrokerStore | undefined;
  let standing: StandingBy | undefined;
  try {
    await preparePostgresSchema(reader, queue);
    rmSync(options.cacheDir, { recursive: true, force: true });
    // A failed local write (the cache's disk full) is reported by the store's next replay.
    const localFailures: unknown[] = [];
    const localCopy = openLmdbStore({
      path: options.cacheDir,
      flushPolicy: 'commit',
      scratch: true,
      onWriteError: (error) => localFailures.push(error),
    });
    mirror = localCopy;
    const copy = new WarmCopy(localCopy);
    const warmingHooks = {
      ...(options.onWarmCopyLoaded ? { onLoaded: options.onWarmCopyLoaded } : {}),
      ...(options.onWarmCopyError ? { onError: options.onWarmCopyError } : {}),
    };
    const lease = await StoreLease.acquire(reader, {
      owner: options.owner,
      ttlMs,
      liveness,
      ...(options.advertiseUrl === undefined ? {} : { advertiseUrl: options.advertiseUrl }),
      ...(options.advertiseTcpUrl === undefined ? {} : { advertiseTcpUrl: options.advertiseTcpUrl }),
      onWaiting: (holder) => {
        // A standby: keep the copy close, so that taking over reads only what changed.
        standing ??= standBy(copy, reader, queue, warmingHooks, options.standbyFeed);
        standing.holderSeen(holder);
        options.onWaitingForLease?.(holder);
      },
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.leaseGate ? { gate: options.leaseGate } : {}),
    });
    await standing?.stop();
    await copy.complete(reader);
    if (localFailures.length > 0) throw localFailures[0];
    return new PostgresStore({
      options,
      writer,
      reader,
      lease,
      mirror: localCopy,
      localFailures,
      rowSeq: copy.rowSeq,
    });
  } catch (error) {
    await standing?.stop();
    await mirror?.close();
    await Promise.allSettled([writer.end({ timeout: 1 }), reader.end({ timeout: 1 }), liveness.close()]);
    throw error;
  }
}
