import postgres from 'postgres';

/** A session of the test's that outlives the owner's, holding its liveness lock: {@link outliveOwnerSession}. */
export interface LingeringSession extends AsyncDisposable {
  /** Resolves once this session holds the lock: the owner's own session has ended. */
  readonly holding: Promise<void>;
  /** End the session (and the lock with it). */
  end(): Promise<void>;
}

/**
 * Make the store's owner look, once it dies, like a broker whose host vanished: the database has
 * not yet seen its session end, so standbys must wait for the lease to expire. The owner holds a
 * liveness lock (with queues, one per queue: queue 0's, the lowest key, is the one a standby
 * waits for first) that a dead
 * owner's session gives up at once; this session queues for that lock and is granted it the
 * moment the owner's session ends, before any standby's next poll. Call it while the owner serves.
 */
export async function outliveOwnerSession(store: string): Promise<LingeringSession> {
  const sql = postgres(store, { max: 1, onnotice: () => {}, idle_timeout: 0, max_lifetime: null });
  try {
    const [lock] = await sql<{ key: string }[]>`
      select ((classid::bigint << 32) | objid::bigint)::text as key
        from pg_locks
       where locktype = 'advisory' and granted
         and database = (select oid from pg_database where datname = current_database())
       order by (classid::bigint << 32) | objid::bigint
       limit 1`;
    if (!lock) throw new Error('the store has no owner holding its liveness lock');
    const holding = sql`select pg_advisory_lock(${lock.key}::bigint)`.then(() => undefined);
    holding.catch(() => {});
    const end = () => sql.end({ timeout: 5 });
    return { holding, end, [Symbol.asyncDispose]: end };
  } catch (error) {
    await sql.end({ timeout: 5 });
    throw error;
  }
}
