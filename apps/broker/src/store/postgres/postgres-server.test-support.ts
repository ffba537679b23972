import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type PostgresServer, startPostgres } from '@ricochet/postgres-testkit';
import postgres, { type Sql, type TransactionSql } from 'postgres';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { BrokerStore } from '../broker-store.js';
import type { StoredMessage } from '../records.js';
import { openPostgresStore, type PostgresStoreOptions } from './postgres-store.js';

/** What {@link postgresForThisFile} gives a test file. */
export interface TestPostgres {
  /** The server (started before the file's first test). */
  readonly server: () => PostgresServer;
  /** A fresh database named `<prefix>_<random>`: its URL. */
  createDatabase(prefix: string): Promise<string>;
  /** Run after the current test, the last registered first. */
  cleanup(step: () => Promise<void> | void): void;
}

/**
 * A throwaway PostgreSQL server for the calling test file: started before its tests, stopped after
 * them, with per-test cleanups run after each test. Call it at the top level of the file.
 */
export function postgresForThisFile(): TestPostgres {
  let server: PostgresServer | undefined;
  const cleanups: (() => Promise<void> | void)[] = [];
  beforeAll(async () => {
    server = await startPostgres();
  }, 120_000);
  // A fast shutdown checkpoints what the tests wrote (thousands of rows), and may take the testkit's
  // whole 10 s grace before its SIGKILL on a loaded machine: the hook's default 10 s is too short.
  afterAll(async () => {
    await server?.stop();
  }, 60_000);
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const started = () => {
    if (!server) throw new Error('the PostgreSQL server starts before the first test');
    return server;
  };
  return {
    server: started,
    createDatabase: (prefix) => started().createDatabase(`${prefix}_${randomBytes(6).toString('hex')}`),
    cleanup: (step) => {
      cleanups.push(step);
    },
  };
}

/** A fresh database on `pg`'s server, and a way to open stores on it, each with a cache directory of its own. */
export async function storeDatabase(pg: TestPostgres): Promise<{
  readonly url: string;
  readonly sql: Sql;
  open(options?: Partial<PostgresStoreOptions>): Promise<BrokerStore>;
}> {
  const url = await pg.createDatabase('store');
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  pg.cleanup(() => sql.end({ timeout: 5 }));
  const open = async (options: Partial<PostgresStoreOptions> = {}): Promise<BrokerStore> => {
    const dir = mkdtempSync(join(tmpdir(), 'ricochet-pg-cache-'));
    const store = await openPostgresStore({ url, cacheDir: join(dir, 'cache'), owner: 'test', ...options });
    pg.cleanup(async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    });
    return store;
  };
  return { url, sql, open };
}

/** A small message at `offset` of `topic`. */
export function message(topic: string, offset: number): StoredMessage {
  return {
    messageId: `m-${topic}-${offset}`,
    topic,
    offset,
    body: new Uint8Array([offset]),
    bornAt: 1,
    storedAt: 2,
  };
}

/**
 * Another session, on `url`, opens a transaction, runs `hold` in it (taking whatever locks its
 * statements take), and keeps it open until `release()`: `held` resolves once `hold` ran. What a
 * broker stopped in the middle of a transaction leaves behind.
 */
export function holdOpenTransaction(
  url: string,
  hold: (tx: TransactionSql) => Promise<unknown>,
): { readonly held: Promise<void>; release(): Promise<void> } {
  const session = postgres(url, { max: 1, onnotice: () => {} });
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let holding: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    holding = resolve;
  });
  const open = session.begin(async (tx) => {
    await hold(tx);
    holding();
    await released;
  });
  let ended: Promise<void> | undefined;
  return {
    held,
    release() {
      release();
      ended ??= open.then(() => session.end({ timeout: 5 }));
      return ended;
    },
  };
}
