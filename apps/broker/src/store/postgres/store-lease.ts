import type { Sql, TransactionSql } from './driver.js';
import type { LivenessLock } from './liveness-lock.js';
import type { FenceCall } from './write-batch.js';

/** The SQLSTATE `ricochet_fence` raises when the caller's epoch no longer owns the store. */
export const FENCED_SQLSTATE = 'RCF01';

/**
 * `ricochet_fence(epoch, ttl)`: renew the lease if `epoch` still holds it, else raise
 * {@link FENCED_SQLSTATE}. Every write transaction calls it first, so the update takes the lease
 * row's lock: a broker taking the lease over waits for a transaction in flight to end, and a
 * deposed broker's transaction fails whole. Times are the database's, so brokers' clocks never
 * matter.
 */
export const FENCE_FUNCTION = `
create or replace function ricochet_fence(p_epoch bigint, p_ttl_ms bigint) returns void
language plpgsql as $$
begin
  update ricochet_lease
     set expires_at = clock_timestamp() + p_ttl_ms * interval '1 millisecond'
   where id = 1 and epoch = p_epoch;
  if not found then
    raise exception 'the store lease of epoch % was taken over by another broker', p_epoch
      using errcode = '${FENCED_SQLSTATE}';
  end if;
end
$$`;

/** Who holds the lease now, for the log line of a broker waiting for it. */
export interface LeaseHolder {
  readonly owner: string;
  readonly epoch: number;
  readonly expiresInMs: number;
  /** Where the holder serves clients (its `--advertise-url`), or `undefined` if it did not say. */
  readonly advertiseUrl: string | undefined;
  /** Where its TCP listener serves clients, or `undefined` if it has none or did not say. */
  readonly advertiseTcpUrl: string | undefined;
}

export interface AcquireLeaseOptions {
  /**
   * This broker's name in the lease row. A broker that finds its own name there takes the lease at
   * once: it is the same broker restarted (after a crash, its old process is gone; were it only
   * paused, the new epoch fences it all the same).
   */
  readonly owner: string;
  readonly ttlMs: number;
  /** Where this broker serves clients once it owns the store: standbys relay clients there. */
  readonly advertiseUrl?: string;
  /** Where its TCP listener serves clients once it owns the store. */
  readonly advertiseTcpUrl?: string;
  /** Called each time the lease is found held by someone else, before waiting. */
  readonly onWaiting?: (holder: LeaseHolder) => void;
  /** Stop waiting: the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * This broker's liveness lock: held while it owns the store, and the sign that an owner's
   * session is gone while it waits. Without it, only the lease's expiry hands the store over.
   */
  readonly liveness?: LivenessLock;
  /**
   * Closed while this broker may not take the lease yet: it waits as a standby meanwhile (and keeps
   * looking at the liveness lock, so that it takes a dead owner's lease as soon as the gate opens,
   * and tries again the moment it does). For the queues past 0 of a split store, which a broker
   * takes only once it owns queue 0. @default always open
   */
  readonly gate?: LeaseGate;
}

/**
 * Whether a broker may take a lease yet (see `AcquireLeaseOptions.gate`): closed until
 * {@link LeaseGate.open}, and closed again by {@link LeaseGate.close} (a queue assigned to this
 * broker, then to another before it took the lease).
 */
export class LeaseGate {
  #isOpen = false;
  #resolve: () => void = () => {};
  #opened = this.#closedPromise();

  get isOpen(): boolean {
    return this.#isOpen;
  }

  /** Resolves when the gate opens (at once while it is open). */
  get opened(): Promise<void> {
    return this.#opened;
  }

  open(): void {
    if (this.#isOpen) return;
    this.#isOpen = true;
    this.#resolve();
  }

  close(): void {
    if (!this.#isOpen) return;
    this.#isOpen = false;
    this.#opened = this.#closedPromise();
  }

  #closedPromise(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#resolve = resolve;
    });
  }
}

/**
 * Sightings of a free liveness lock, one poll apart, before a standby takes a live lease over. An
 * owner whose session dropped with the database (a restart, a network cut) takes its lock back
 * the moment it reconnects, well within one poll: a database restart should not move the store.
 */
const FREE_SIGHTINGS_BEFORE_TAKEOVER = 2;

/** How often an owner whose liveness session ended tries to take the lock back. */
const RECLAIM_INTERVAL_MS = 50;

/**
 * The lease that makes one broker the only writer of a store (the seam's rule 6): one row with an
 * owner, an epoch and an expiry on database time. A broker takes it when it is free, expired or
 * its own, bumping the epoch; it keeps it by renewing it in every write transaction and on a heartbeat; it
 * gives it back (expires it) on a clean close, so a standby broker takes over at once.
 *
 * A crashed owner is replaced sooner than its expiry: the owner holds its {@link LivenessLock}
 * and writes its epoch in the row's `live_epoch`. A standby that finds the lock free
 * {@link FREE_SIGHTINGS_BEFORE_TAKEOVER} polls in a row while `live_epoch` names the current epoch
 * knows that owner's session ended, and takes the lease at once. Safety never rests on this: the
 * new epoch fences every write of the old owner, were it alive after all. An owner that took the
 * lease without the lock (a paused ex-owner still held it) writes `live_epoch` once it has it;
 * until then only expiry replaces it. A broker of an older release never writes `live_epoch`, so
 * its epochs are never taken over early.
 */
export class StoreLease {
  readonly epoch: number;
  readonly ttlMs: number;
  readonly #liveness: LivenessLock | undefined;
  #reclaiming = false;
  #released = false;

  private constructor(epoch: number, ttlMs: number, liveness: LivenessLock | undefined) {
    this.epoch = epoch;
    this.ttlMs = ttlMs;
    this.#liveness = liveness;
    if (liveness) liveness.onLost = () => this.#reclaim();
  }

  /** Take the lease, waiting while another broker holds it; polls four times per TTL, at most every 250 ms. */
  static async acquire(sql: Sql, options: AcquireLeaseOptions): Promise<StoreLease> {
    const { owner, ttlMs, liveness } = options;
    // Only when there is no row yet: an insert meeting the row waits on whatever locks it (a
    // holder stalled inside a transaction, see endStalledHolder), and would wait with it.
    await sql`
      insert into ricochet_lease (id, owner, epoch, expires_at)
      select 1, '', 0, '-infinity' where not exists (select 1 from ricochet_lease where id = 1)
      on conflict (id) do nothing`;
    const pollMs = Math.min(250, Math.max(10, Math.floor(ttlMs / 4)));
    let freeSightings = 0;
    // Bounded by the caller's signal; a live holder renews forever, so there is no count bound here.
    for (;;) {
      options.signal?.throwIfAborted();
      const locked = liveness ? await liveness.take() : false;
      freeSightings = locked ? freeSightings + 1 : 0;
      const holderGone = freeSightings >= FREE_SIGHTINGS_BEFORE_TAKEOVER;
      const mayTake = options.gate?.isOpen ?? true;
      // The take is a transaction of four round trips: tried only when the holder read just now
      // leaves it a chance (no holder, an expired lease, this broker's own, or a holder whose
      // session is gone), not at every poll of a standby behind a live owner. A lease that
      // expires right after the read is taken at the next poll, as one that expired between two
      // polls always was.
      const holder = await leaseHolder(sql);
      const worthTrying =
        holder === undefined || holder.expiresInMs === 0 || holder.owner === owner || holderGone;
      const taken =
        !mayTake || !worthTrying
          ? []
          : await withLockTimeout(
              sql,
              Math.max(ttlMs, pollMs),
              // The take and its fence record commit together: no epoch without its owner's row.
              (tx) => tx<{ epoch: string }[]>`
        with taken as (
        update ricochet_lease
           set owner = ${owner}, epoch = epoch + 1, advertise_url = ${options.advertiseUrl ?? ''},
               advertise_tcp_url = ${options.advertiseTcpUrl ?? ''},
               live_epoch = case when ${locked}::boolean then epoch + 1 else 0 end,
               expires_at = clock_timestamp() + ${ttlMs} * interval '1 millisecond'
         where id = 1
           and (expires_at < clock_timestamp() or owner = ${owner}
                or (${holderGone}::boolean and live_epoch = epoch))
        returning epoch, owner)
        insert into ricochet_lease_takes (epoch, owner) select epoch, owner from taken
        returning epoch`,
            ).catch(async (error: unknown) => {
              if (!isLockTimeout(error)) throw error;
              await endStalledHolder(sql);
              return [];
            });
      const row = taken[0];
      if (row) return new StoreLease(Number(row.epoch), ttlMs, liveness);
      // Free for the owner to take back, should its session have dropped only for a moment.
      if (locked) await liveness?.giveBack();
      if (holder) options.onWaiting?.(holder);
      await delay(pollMs, options.signal, mayTake ? undefined : options.gate?.opened);
    }
  }

  /**
   * While this broker owns the store: take the liveness lock if it does not hold it (the heartbeat
   * calls this), and write this epoch as the live one once it does.
   */
  async keepLive(): Promise<void> {
    const liveness = this.#liveness;
    if (!liveness || liveness.held || this.#released) return;
    if (!(await liveness.take())) return;
    const epoch = this.epoch;
    const marked = await liveness
      .query((sql) => sql`update ricochet_lease set live_epoch = epoch where id = 1 and epoch = ${epoch}`)
      .then(
        (result) => result.count === 1,
        () => false,
      );
    // Deposed: the lock is no sign of this broker's ownership, and a standby may need it.
    if (!marked) await liveness.giveBack();
  }

  /** The statement that renews the lease and fails the transaction if it was taken over. */
  fence(tx: TransactionSql | Sql) {
    return tx`select ricochet_fence(${this.epoch}, ${this.ttlMs})`;
  }

  /** The same fence as the main query of a write batch's one statement (`WriteBatch.fencedStatement`). */
  fenceCall(): FenceCall {
    return { text: 'select ricochet_fence($1::bigint, $2::bigint)', parameters: [this.epoch, this.ttlMs] };
  }

  /** Give the lease back, if still ours: a standby may take it at once. */
  async release(sql: Sql): Promise<void> {
    this.#released = true;
    await sql`update ricochet_lease set expires_at = '-infinity' where id = 1 and epoch = ${this.epoch}`;
  }

  /** End the liveness session (after {@link release}, or once the store is lost). */
  async close(): Promise<void> {
    this.#released = true;
    await this.#liveness?.close();
  }

  /**
   * The liveness session ended while this broker owns the store (the database restarted, or the
   * connection dropped): take the lock back as soon as the database answers, before a standby's
   * second sighting. Bounded by the lease's TTL: past it, the store is lost anyway.
   */
  #reclaim(): void {
    if (this.#reclaiming) return;
    this.#reclaiming = true;
    const attempts = Math.ceil(this.ttlMs / RECLAIM_INTERVAL_MS);
    void (async () => {
      for (let attempt = 0; attempt < attempts && !this.#released; attempt++) {
        await this.keepLive();
        if (this.#liveness?.held) break;
        await delay(RECLAIM_INTERVAL_MS, undefined);
      }
    })().finally(() => {
      this.#reclaiming = false;
    });
  }
}

/** Who holds the lease now, expired or not; `undefined` before any broker took it. */
export async function leaseHolder(sql: Sql): Promise<LeaseHolder | undefined> {
  const [row] = await sql<
    {
      owner: string;
      epoch: string;
      expires_in_ms: number;
      advertise_url: string;
      advertise_tcp_url: string;
    }[]
  >`
    select owner, epoch, advertise_url, advertise_tcp_url,
           extract(epoch from greatest(expires_at, clock_timestamp()) - clock_timestamp()) * 1000 as expires_in_ms
      from ricochet_lease where id = 1`;
  if (!row || row.owner === '') return undefined;
  return {
    owner: row.owner,
    epoch: Number(row.epoch),
    expiresInMs: Math.max(0, Math.round(Number(row.expires_in_ms))),
    advertiseUrl: row.advertise_url === '' ? undefined : row.advertise_url,
    advertiseTcpUrl: row.advertise_tcp_url === '' ? undefined : row.advertise_tcp_url,
  };
}

/** Whether an error is the fence refusing a deposed broker's transaction. */
export function isFenced(error: unknown): boolean {
  return (
    typeof error === 'object' && error !== null && (error as { code?: unknown }).code === FENCED_SQLSTATE
  );
}

/** PostgreSQL's `lock_not_available`: a statement waited `lock_timeout` for a lock. */
const LOCK_NOT_AVAILABLE = '55P03';

function isLockTimeout(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === LOCK_NOT_AVAILABLE;
}

/** Run `statement` in a transaction of its own that waits at most `timeoutMs` for any lock. */
async function withLockTimeout<T>(
  sql: Sql,
  timeoutMs: number,
  statement: (tx: TransactionSql) => Promise<T>,
) {
  return (
    await sql.begin(async (tx) => {
      await tx.unsafe(`set local lock_timeout = ${Math.ceil(timeoutMs)}`);
      return [await statement(tx)];
    })
  )[0] as T;
}

/**
 * The lease row is locked by a transaction that outlived the lease: its holder's fence, left
 * open by a broker that hangs inside a write transaction (SIGSTOP, a frozen VM) while its kernel
 * keeps the connection up. A session idle in it ends by itself
 * (`idle_in_transaction_session_timeout` on the writer); one stuck otherwise (mid-statement, or
 * its results unread) would hold the lock, and every broker's take, for as long as the hang. End
 * that session: its transaction rolls back, and its broker's retry of it is refused by the fence.
 * Only once the lease it holds has expired, so a live owner is never cut off; the same database
 * role may end its own sessions.
 */
async function endStalledHolder(sql: Sql): Promise<void> {
  await sql`
    select pg_terminate_backend(activity.pid)
      from ricochet_lease lease, pg_stat_activity activity
     where lease.id = 1 and lease.expires_at < clock_timestamp()
       and activity.backend_xid = lease.xmax and activity.pid <> pg_backend_pid()`;
}

/** Wait `ms`, or less when `wake` resolves first; rejects when `signal` aborts. */
function delay(ms: number, signal: AbortSignal | undefined, wake?: Promise<void>): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    void wake?.then(done);
  });
}
