import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type PostgresServer, startPostgres } from '@ricochet/postgres-testkit';
import postgres from 'postgres';

/** Where the benched brokers keep their state: the embedded LMDB store, or PostgreSQL (DESIGN.md §9). */
export type BenchStore = 'lmdb' | 'postgres';

let chosen: BenchStore = 'lmdb';
let queues = 1;
let brokers = 1;
let spread = false;
let server: Promise<PostgresServer> | undefined;

/**
 * Choose the store of every broker the bench starts from now on, how many queues it is split
 * into, over how many brokers they are spread (`--store-spread`; 1: one broker owns them all), and
 * whether the brokers run with `--store-spread` (by default when there are two or more; `pnpm bench
 * --scaling` spreads over one broker too, so that every broker count runs with the same flags).
 */
export function useBenchStore(choice: {
  readonly store: BenchStore;
  readonly storeQueues: number;
  readonly spreadBrokers: number;
  readonly spread?: boolean;
}): void {
  chosen = choice.store;
  queues = choice.storeQueues;
  brokers = choice.spreadBrokers;
  spread = choice.spread ?? choice.spreadBrokers > 1;
}

/** How many brokers share each benched store, its queues spread over them (1: not spread). */
export function spreadBrokers(): number {
  return brokers;
}

/** How many queues each benched PostgreSQL store is split into (1: not split). */
export function spreadQueues(): number {
  return queues;
}

export function benchStore(): BenchStore {
  return chosen;
}

/**
 * The `--store` flags of a new broker: none for LMDB; for PostgreSQL a fresh database on the
 * bench's one server (started at the first call, fsync on, on 127.0.0.1 and a free port), so no
 * broker sees another's data.
 */
export async function storeArgs(): Promise<string[]> {
  if (chosen === 'lmdb') return [];
  // Explicit, as the broker's defaults differ (8 queues, spread): `--store-queues` alone benches
  // one broker owning its queues, which a standby may take over.
  return [
    '--store',
    await newBenchDatabase(),
    '--store-queues',
    String(queues),
    spread ? '--store-spread' : '--no-store-spread',
  ];
}

/** A fresh database on the bench's PostgreSQL server (started at the first call): its URL. */
export async function newBenchDatabase(): Promise<string> {
  server ??= startPostgres();
  return (await server).createDatabase(`bench_${randomBytes(6).toString('hex')}`);
}

/**
 * The pid of the bench's PostgreSQL server (started at the first call): its postmaster, the
 * parent of every backend, found as the parent of a backend of our own. For its CPU time, which
 * `processTreeCpuTimeOf` (cpu-time.ts) reads from the postmaster down.
 */
export async function benchPostgresPid(): Promise<number> {
  server ??= startPostgres();
  const sql = postgres((await server).url, { max: 1, onnotice: () => {} });
  try {
    const [row] = await sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
    const status = readFileSync(`/proc/${row?.pid}/status`, 'utf8');
    const ppid = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]);
    if (!Number.isInteger(ppid) || ppid <= 1) throw new Error(`no postmaster above backend ${row?.pid}`);
    return ppid;
  } finally {
    await sql.end();
  }
}

/** Stop the bench's PostgreSQL server, if one was started. */
export async function stopBenchStore(): Promise<void> {
  const started = server;
  server = undefined;
  await (await started)?.stop();
}
