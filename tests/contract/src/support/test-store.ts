import { createHash } from 'node:crypto';
import postgres from 'postgres';
import { inject } from 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Set by the `contract-postgres` project's global setup: the server every broker's database lives on. */
    postgresServerUrl?: string;
  }
}

/** Whether this run's brokers store on PostgreSQL (the `contract-postgres` project) instead of LMDB. */
export function onPostgres(): boolean {
  return inject('postgresServerUrl') !== undefined;
}

/**
 * The `store` setting of a broker on `dataDir`: none (the embedded store in `dataDir`) in the
 * `contract` project; in `contract-postgres`, a PostgreSQL database of its own, named after the
 * data directory, so a broker restarted (or killed and started again) on the same directory finds
 * the same database.
 */
export async function storeFor(dataDir: string): Promise<{ readonly store?: string }> {
  if (inject('postgresServerUrl') === undefined) return {};
  return { store: await postgresDatabase(createHash('sha256').update(dataDir).digest('hex').slice(0, 20)) };
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
