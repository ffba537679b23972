import type { FlushPolicy } from '../../config.js';
import type { StandbyFeedOptions } from './standby-feed.js';
import type { LeaseGate, LeaseHolder } from './store-lease.js';

/** Options of {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  /** `postgres://user[:password]@host[:port]/database`. */
  readonly url: string;
  /** Where the local copy of the store lives (an LMDB scratch store, rebuilt at every open). */
  readonly cacheDir: string;
  /**
   * Which queue of the database this store is (`queue-schema.ts`): an integer from 0 to 63, each
   * a whole store with its own lease, owned apart from the others. 0 is the database's store as
   * brokers that know nothing of queues open it. @default 0
   */
  readonly queue?: number;
  /** This broker's name in the lease row, for the log lines of brokers waiting for it. */
  readonly owner: string;
  /** Where this broker serves clients, written in the lease row for standbys to relay to. */
  readonly advertiseUrl?: string;
  /** Where its TCP listener serves clients, in the lease row too. */
  readonly advertiseTcpUrl?: string;
  /** @default 'fsync' (`synchronous_commit = on`); `commit`: `synchronous_commit = off`. */
  readonly flushPolicy?: FlushPolicy;
  /** How long the store lease lasts without renewal. @default 10_000 */
  readonly leaseTtlMs?: number;
  /** How long a failed transaction is retried (it is idempotent) before the store gives up. @default 5_000 */
  readonly writeRetryMs?: number;
  /** Called once for every write that fails for good, with the error. */
  readonly onWriteError?: (error: unknown) => void;
  /** Called while another broker holds the lease, before each wait. */
  readonly onWaitingForLease?: (holder: LeaseHolder) => void;
  /**
   * Called once when the store stops accepting writes: the lease was taken over (this broker was
   * paused or cut off past its TTL), or a transaction failed for longer than `writeRetryMs`.
   */
  readonly onLost?: (error: unknown) => void;
  /** Called each time the database's fence refuses a transaction of this store: another broker took the lease. */
  readonly onFenced?: () => void;
  /** Called once a standby loaded its local copy's messages and history, which it then keeps up to date. */
  readonly onWarmCopyLoaded?: (elapsedMs: number) => void;
  /** Called when a standby's step to keep its local copy up to date failed, the first of a run (it tries again). */
  readonly onWarmCopyError?: (error: unknown) => void;
  /** Abandon the wait for the lease (the returned promise rejects). */
  readonly signal?: AbortSignal;
  /**
   * Closed while this broker may not take the lease yet: until it opens, the broker waits as a
   * standby, keeping its copy warm. A split store's queues past 0 wait for queue 0 this way.
   * @default always open
   */
  readonly leaseGate?: LeaseGate;
  /**
   * The feed between owner and standbys (`standby-feed.ts`): a standby follows its owner's, and
   * an owner publishes its commits to its standbys. Without it, a standby reads every change from
   * the database. @default none
   */
  readonly standbyFeed?: StandbyFeedOptions;
}
