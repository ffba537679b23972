import postgres, { type Sql } from '../../store/postgres/driver.js';
import { SCHEMA_LOCK } from '../../store/postgres/postgres-schema.js';
import { presentTables, readSeenTables } from './present-tables.js';

/**
 * The live brokers of a database: each broker on a PostgreSQL store keeps a row of its own in
 * `ricochet_brokers`, renewed by a heartbeat, owner and standby alike. What rendezvous hashing
 * (`cluster/membership/queue-assignment.ts`) spreads the queues over, and what `GET /v1/cluster` shows.
 *
 * The table is in the default schema, queue 0's, beside the store's tables: one per database,
 * whatever the number of queues. It is not part of the store's layout (`postgres-schema.ts`):
 * brokers that know nothing of it ignore it, and a broker that needs it creates it, so it needs
 * no layout version. Times are the database's, like the lease's, so brokers' clocks never matter.
 */
const CREATE_TABLE = `
create table if not exists ricochet_brokers (
  broker_id text primary key,
  advertise_url text not null default '',
  advertise_tcp_url text not null default '',
  store_queues int not null,
  started_at timestamptz not null,
  expires_at timestamptz not null
)`;

/**
 * An arbitrary constant: the first key of the advisory lock each broker's registry connection
 * holds while the broker lives (the second is a hash of its id). A broker whose process died lost
 * its lock with its session: it is not live, though its row has not expired yet, so its queues go
 * to others at once rather than a TTL later.
 */
export const REGISTRY_LOCK = 0x72696332;

/** How long a closing registry waits for its row's delete, in seconds (postgres.js counts them so). */
const CLOSE_TIMEOUT_S = 2;

/** A broker whose row has not expired, and whose registry connection holds its lock ({@link REGISTRY_LOCK}). */
export interface LiveBroker {
  /** Its identity, as in the lease rows it takes (`brokerIdentity` in `store/open-store.ts`). */
  readonly brokerId: string;
  /** Where it serves clients (its `--advertise-url`), or `undefined` if it did not say. */
  readonly advertiseUrl: string | undefined;
  /** Where its TCP listener serves clients, or `undefined` if it has none or did not say. */
  readonly advertiseTcpUrl: string | undefined;
  /** Its `--store-queues`: a broker that disagrees with the others splits the store differently. */
  readonly storeQueues: number;
  /** How long its row lives without another heartbeat, on the database's clock. */
  readonly expiresInMs: number;
}

/** Options of {@link openBrokerRegistry}. */
export interface BrokerRegistryOptions {
  /** The database, as `--store` names it. */
  readonly url: string;
  readonly brokerId: string;
  readonly advertiseUrl?: string;
  readonly advertiseTcpUrl?: string;
  readonly storeQueues: number;
  /** How long the row lives without a heartbeat (the broker uses its `--store-lease-ms`). */
  readonly ttlMs: number;
  /** A heartbeat failed (the database unreachable): it is tried again at the next one. */
  readonly onError?: (error: unknown) => void;
}

/** This broker's row in `ricochet_brokers`, kept alive until {@link BrokerRegistry.close}. */
export interface BrokerRegistry {
  /** The live brokers, this one included while its heartbeats get through, by id. */
  live(): Promise<LiveBroker[]>;
  /** Run reads on the registry's connection (one, in the default schema), e.g. `readClusterView`. */
  read<T>(query: (sql: Sql) => Promise<T>): Promise<T>;
  /**
   * Where this broker serves clients, once it knows (it listens after it registers): written at
   * once, and at every heartbeat after. Other brokers reach the queues it owns there.
   */
  advertise(urls: {
    readonly advertiseUrl: string;
    readonly advertiseTcpUrl?: string | undefined;
  }): Promise<void>;
  /** Stop the heartbeat and delete this broker's row, so others see it gone at once. Idempotent. */
  close(): Promise<void>;
}

/**
 * Register this broker in the database at `url` at once (creating the table if missing) and keep
 * its row alive: a heartbeat every quarter of `ttlMs`, between 10 ms and 1 s, on a connection of
 * its own. Rows of brokers that stopped without saying so (killed, cut off) expire `ttlMs` after
 * their last heartbeat; the registration deletes every expired row, so they do not pile up.
 * @throws when the database cannot be reached or written at registration.
 */
export async function openBrokerRegistry(options: BrokerRegistryOptions): Promise<BrokerRegistry> {
  // Never a search_path: the table is in the default schema whatever queue this broker serves.
  const sql = postgres(options.url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await sql.begin(async (tx) => {
      // Brokers starting together: concurrent `create table if not exists` can fail on each other.
      await tx`select pg_advisory_xact_lock(${SCHEMA_LOCK})`;
      await tx.unsafe(CREATE_TABLE);
    });
    await sql`delete from ricochet_brokers where expires_at <= clock_timestamp()`;
    await upsertRow(sql, options, { restarted: true });
  } catch (error) {
    await sql.end({ timeout: 1 });
    throw error;
  }
  return new HeartbeatRegistry(sql, options);
}

/** The registry's table, in the default schema. */
const BROKERS_TABLE = 'ricochet_brokers';

/** The rows of `ricochet_brokers` that have not expired, by id; none while the table does not exist. */
export async function liveBrokers(sql: Sql): Promise<LiveBroker[]> {
  if (!(await presentTables(sql, [BROKERS_TABLE])).has(BROKERS_TABLE)) return [];
  const rows = await readSeenTables(
    sql,
    () => sql<
      {
        broker_id: string;
        advertise_url: string;
        advertise_tcp_url: string;
        store_queues: number;
        expires_in_ms: number;
      }[]
    >`
    with clock as (select clock_timestamp() as at),
         held as (select objid from pg_locks
                   where locktype = 'advisory' and granted and classid = ${REGISTRY_LOCK}::bigint::oid and objsubid = 2)
    select broker_id, advertise_url, advertise_tcp_url, store_queues,
           extract(epoch from expires_at - clock.at) * 1000 as expires_in_ms
      from ricochet_brokers, clock
     where expires_at > clock.at and (hashtext(broker_id)::bigint & 4294967295)::oid in (select objid from held)`,
  );
  return rows
    .map((row) => ({
      brokerId: row.broker_id,
      advertiseUrl: row.advertise_url === '' ? undefined : row.advertise_url,
      advertiseTcpUrl: row.advertise_tcp_url === '' ? undefined : row.advertise_tcp_url,
      storeQueues: row.store_queues,
      expiresInMs: Math.max(0, Math.round(Number(row.expires_in_ms))),
    }))
    .sort((a, b) => (a.brokerId < b.brokerId ? -1 : a.brokerId > b.brokerId ? 1 : 0));
}

/**
 * Write this broker's row, alive for `ttlMs` from now. At registration its start time is now; at a
 * heartbeat it keeps the one it has (unless the row was deleted meanwhile, and comes back).
 */
async function upsertRow(
  sql: Sql,
  options: BrokerRegistryOptions,
  { restarted }: { readonly restarted: boolean },
): Promise<void> {
  // Held already unless the connection was made again (the database restarted, say): taken again
  // then, never twice on one session (advisory locks count their takes). `pg_locks` spells the
  // second key unsigned, `hashtext`'s int4 as such.
  await sql`
    select pg_try_advisory_lock(${REGISTRY_LOCK}, hashtext(${options.brokerId}))
     where not exists (
       select 1 from pg_locks
        where locktype = 'advisory' and pid = pg_backend_pid() and classid = ${REGISTRY_LOCK}::bigint::oid
          and objsubid = 2 and objid = (hashtext(${options.brokerId})::bigint & 4294967295)::oid)`;
  await sql`
    insert into ricochet_brokers
           (broker_id, advertise_url, advertise_tcp_url, store_queues, started_at, expires_at)
    values (${options.brokerId}, ${options.advertiseUrl ?? ''}, ${options.advertiseTcpUrl ?? ''},
            ${options.storeQueues}, clock_timestamp(),
            clock_timestamp() + ${options.ttlMs} * interval '1 millisecond')
    on conflict (broker_id) do update
       set advertise_url = excluded.advertise_url, advertise_tcp_url = excluded.advertise_tcp_url,
           store_queues = excluded.store_queues, expires_at = excluded.expires_at,
           started_at = case when ${restarted}::boolean then excluded.started_at else ricochet_brokers.started_at end`;
}

class HeartbeatRegistry implements BrokerRegistry {
  readonly #sql: Sql;
  #options: BrokerRegistryOptions;
  readonly #timer: NodeJS.Timeout;
  /** A heartbeat is out: a slow one is not joined by more behind it on the one connection. */
  #beating = false;
  #closing: Promise<void> | undefined;

  constructor(sql: Sql, options: BrokerRegistryOptions) {
    this.#sql = sql;
    this.#options = options;
    const intervalMs = Math.min(1_000, Math.max(10, Math.floor(options.ttlMs / 4)));
    this.#timer = setInterval(() => this.#beat(), intervalMs);
    this.#timer.unref();
  }

  live(): Promise<LiveBroker[]> {
    return liveBrokers(this.#sql);
  }

  read<T>(query: (sql: Sql) => Promise<T>): Promise<T> {
    return query(this.#sql);
  }

  async advertise(urls: {
    readonly advertiseUrl: string;
    readonly advertiseTcpUrl?: string | undefined;
  }): Promise<void> {
    this.#options = {
      ...this.#options,
      advertiseUrl: urls.advertiseUrl,
      ...(urls.advertiseTcpUrl === undefined ? {} : { advertiseTcpUrl: urls.advertiseTcpUrl }),
    };
    if (!this.#closing) await upsertRow(this.#sql, this.#options, { restarted: false });
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearInterval(this.#timer);
      const { brokerId } = this.#options;
      // One connection runs its queries in the order sent: a heartbeat still out cannot write the
      // row back after this delete. Not deleted (the database unreachable), the row expires within
      // its TTL all the same: nothing to report, and nothing worth holding a stopping broker for.
      const deleted = this.#sql`delete from ricochet_brokers where broker_id = ${brokerId}`.then(
        () => undefined,
        () => undefined,
      );
      // Waits for the delete, for at most CLOSE_TIMEOUT_S.
      await this.#sql.end({ timeout: CLOSE_TIMEOUT_S });
      await deleted;
    })();
    return this.#closing;
  }

  #beat(): void {
    if (this.#beating || this.#closing) return;
    this.#beating = true;
    void upsertRow(this.#sql, this.#options, { restarted: false })
      .catch((error: unknown) => this.#options.onError?.(error))
      .finally(() => {
        this.#beating = false;
      });
  }
}
