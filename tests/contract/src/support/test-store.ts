import { createHash } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set by the `contract-postgres` project's global setup: the server every broker's database lives on. */
    postgresServerUrl?: string;
    /** Set by the `contract-postgres-queues` project: how many queues every broker splits its store into. */
    postgresStoreQueues?: number;
    /** Set by the `contract-postgres-spread` project: queues spread over three brokers (`--store-spread`). */
    postgresStoreSpread?: boolean;
  }
}

/** How many queues this run's brokers split a PostgreSQL store into (`--store-queues`). */
export function storeQueues(): number {
  return inject('postgresStoreQueues') ?? 1;
}

/** Whether this run's brokers spread their store's queues over several brokers (`--store-spread`). */
export function storeSpread(): boolean {
  return inject('postgresStoreSpread') ?? false;
}

/** Whether this run's brokers store on PostgreSQL (the `contract-postgres` project) instead of LMDB. */
export function onPostgres(): boolean {
  return inject('postgresServerUrl') !== undefined;
}

/**
 * The `store` setting of a broker on `dataDir`: none (the embedded store in `dataDir`) in the
 * `contract` project; in `contract-postgres`, a PostgreSQL database of its own, named after the
 * data directory, so a broker restarted (or killed and started again) on the same directory finds
 * the same database; in `contract-postgres-queues`, split into that project's number of queues.
 */
export async function storeFor(
  dataDir: string,
): Promise<{ readonly store?: string; readonly storeQueues?: number; readonly storeSpread?: boolean }> {
  if (inject('postgresServerUrl') === undefined) return {};
  const store = await postgresDatabase(createHash('sha256').update(dataDir).digest('hex').slice(0, 20));
  return { store, storeQueues: storeQueues(), storeSpread: storeSpread() };
}

/**
 * The URL of database `ricochet_<suffix>` on this run's PostgreSQL server, created if missing: for
 * tests of several brokers sharing one store. Only in the `contract-postgres` project.
 */
export async function postgresDatabase(suffix: string): Promise<string> {
  const serverUrl = inject('postgresServerUrl');
  if (serverUrl === undefined) throw new Error('no PostgreSQL server: run the contract-postgres project');
  const name = `ricochet_${suffix}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
  try {
    const [existing] = await admin`select 1 from pg_database where datname = ${name}`;
    if (!existing) await admin.unsafe(`create database ${name}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * How many messages the database at `sql` stores, in all of this run's queues: queue 0 in the
 * default schema, queue q in `ricochet_q<q>` (the broker's `queue-schema.ts`).
 */
export async function storedMessages(sql: postgres.Sql): Promise<number> {
  let count = 0;
  for (let queue = 0; queue < storeQueues(); queue++) {
    const table = queue === 0 ? 'ricochet_messages' : `ricochet_q${queue}.ricochet_messages`;
    const [row] = await sql.unsafe<{ count: string }[]>(`select count(*) from ${table}`);
    count += Number(row?.count);
  }
  return count;
}
