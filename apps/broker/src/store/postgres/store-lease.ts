import type { Sql, TransactionSql } from 'postgres';

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
}

/**
 * The lease that makes one broker the only writer of a store (the seam's rule 6): one row with an
 * owner, an epoch and an expiry on database time. A broker takes it when it is free, expired or
 * its own, bumping the epoch; it keeps it by renewing it in every write transaction and on a heartbeat; it
 * gives it back (expires it) on a clean close, so a standby broker takes over at once.
 */
export class StoreLease {
  readonly epoch: number;
  readonly ttlMs: number;

  private constructor(epoch: number, ttlMs: number) {
    this.epoch = epoch;
    this.ttlMs = ttlMs;
  }

  /** Take the lease, waiting while another broker holds it; polls four times per TTL, at most every 250 ms. */
  static async acquire(sql: Sql, options: AcquireLeaseOptions): Promise<StoreLease> {
    const { owner, ttlMs } = options;
    await sql`insert into ricochet_lease (id, owner, epoch, expires_at) values (1, '', 0, '-infinity') on conflict (id) do nothing`;
    const pollMs = Math.min(250, Math.max(10, Math.floor(ttlMs / 4)));
    // Bounded by the caller's signal; a live holder renews forever, so there is no count bound here.
    for (;;) {
      options.signal?.throwIfAborted();
      const taken = await sql<{ epoch: string }[]>`
        update ricochet_lease
           set owner = ${owner}, epoch = epoch + 1, advertise_url = ${options.advertiseUrl ?? ''},
               advertise_tcp_url = ${options.advertiseTcpUrl ?? ''},
               expires_at = clock_timestamp() + ${ttlMs} * interval '1 millisecond'
         where id = 1 and (expires_at < clock_timestamp() or owner = ${owner})
        returning epoch`;
      const row = taken[0];
      if (row) return new StoreLease(Number(row.epoch), ttlMs);
      const holder = await leaseHolder(sql);
      if (holder) options.onWaiting?.(holder);
      await delay(pollMs, options.signal);
    }
  }

  /** The statement that renews the lease and fails the transaction if it was taken over. */
  fence(tx: TransactionSql | Sql) {
    return tx`select ricochet_fence(${this.epoch}, ${this.ttlMs})`;
  }

  /** Give the lease back, if still ours: a standby may take it at once. */
  async release(sql: Sql): Promise<void> {
    await sql`update ricochet_lease set expires_at = '-infinity' where id = 1 and epoch = ${this.epoch}`;
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

function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
