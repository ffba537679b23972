import { randomBytes } from 'node:crypto';
import { type PostgresServer, startPostgres } from '@ricochet/postgres-testkit';

/** Where the benched brokers keep their state: the embedded LMDB store, or PostgreSQL (DESIGN.md §9). */
export type BenchStore = 'lmdb' | 'postgres';

let chosen: BenchStore = 'lmdb';
let queues = 1;
let brokers = 1;
let server: Promise<PostgresServer> | undefined;

/**
 * Choose the store of every broker the bench starts from now on, how many queues it is split
 * into, and over how many brokers they are spread (`--store-spread`; 1: one broker owns them all).
 */
export function useBenchStore(store: BenchStore, storeQueues = 1, spreadBrokers = 1): void {
  chosen = store;
  queues = storeQueues;
  brokers = spreadBrokers;
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
    brokers > 1 ? '--store-spread' : '--no-store-spread',
  ];
}

/** A fresh database on the bench's PostgreSQL server (started at the first call): its URL. */
export async function newBenchDatabase(): Promise<string> {
  server ??= startPostgres();
  return (await server).createDatabase(`bench_${randomBytes(6).toString('hex')}`);
}

/** Stop the bench's PostgreSQL server, if one was started. */
export async function stopBenchStore(): Promise<void> {
  const started = server;
  server = undefined;
  await (await started)?.stop();
}
