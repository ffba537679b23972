import postgres, { type Sql } from './driver.js';
import { checkQueue, queueConnection } from './queue-schema.js';

/** An arbitrary constant ('ric1'): the advisory lock that says the store's owner is alive. */
const LIVENESS_LOCK = 0x72696331;

/**
 * The liveness lock's key for `queue` (`queue-schema.ts`): advisory locks are per database, not
 * per schema, so each queue's owner needs a key of its own. The queue goes in the key's high 32
 * bits, so queue 0 keeps {@link LIVENESS_LOCK}, the key of brokers that know nothing of queues.
 */
export function livenessLockKey(queue: number): number {
  checkQueue(queue);
  return LIVENESS_LOCK + queue * 2 ** 32;
}

/** Options of {@link LivenessLock.open}. */
export interface LivenessLockOptions {
  /** The store's queue (`queue-schema.ts`), whose lock this is and whose lease row its session updates. @default 0 */
  readonly queue?: number;
}

/**
 * The session-level advisory lock a store's owner holds, on a connection of its own, for as long
 * as it owns the store. PostgreSQL releases it the moment that session ends: when the owner's
 * process dies (`kill -9`, a crash, the OOM killer), its kernel closes the socket and the
 * database ends the session at once. So a standby that can take this lock knows the owner's
 * session is gone, and need not wait for the lease to expire (see `store-lease.ts` for when it may
 * take over). A paused owner keeps its session, and the lock: only the lease's expiry deposes it.
 *
 * The connection is never recycled (no idle timeout, no maximum lifetime): a new session would
 * not hold the lock.
 */
export class LivenessLock {
  readonly #sql: Sql;
  readonly #key: number;
  #held = false;
  #closed = false;
  /** Told when the session holding the lock ended while this broker is still open. */
  onLost: (() => void) | undefined;

  private constructor(url: string, queue: number) {
    this.#key = livenessLockKey(queue);
    this.#sql = postgres(url, {
      max: 1,
      connection: queueConnection(url, queue),
      onnotice: () => {},
      connect_timeout: 10,
      idle_timeout: 0,
      max_lifetime: null,
      onclose: () => {
        if (!this.#held) return;
        this.#held = false;
        if (!this.#closed) this.onLost?.();
      },
    });
  }

  /** The lock of a queue of the database at `url`, not taken yet. */
  static open(url: string, options: LivenessLockOptions = {}): LivenessLock {
    return new LivenessLock(url, options.queue ?? 0);
  }

  /** Whether this broker holds the lock now (as far as it knows: the session may just have ended). */
  get held(): boolean {
    return this.#held;
  }

  /** Take the lock if no other session holds it; whether this broker holds it afterwards. Never throws. */
  async take(): Promise<boolean> {
    if (this.#held || this.#closed) return this.#held;
    try {
      const [row] = await this.#sql<{ taken: boolean }[]>`select pg_try_advisory_lock(${this.#key}) as taken`;
      this.#held = row?.taken === true;
    } catch {
      this.#held = false;
    }
    return this.#held;
  }

  /** Let go of the lock (a standby that did not take the lease over), keeping the session. */
  async giveBack(): Promise<void> {
    if (!this.#held) return;
    this.#held = false;
    await this.#sql`select pg_advisory_unlock(${this.#key})`.catch(() => {});
  }

  /** Run `query` on the lock's own session (the lease row's updates that go with the lock). */
  query<T>(query: (sql: Sql) => Promise<T>): Promise<T> {
    return query(this.#sql);
  }

  /** End the session, and the lock with it. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#held = false;
    await this.#sql.end({ timeout: 5 });
  }
}
