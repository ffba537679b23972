import { randomBytes } from 'node:crypto';
import { type PostgresServer, startPostgres } from '@ricochet/postgres-testkit';
import { afterAll, afterEach, beforeAll } from 'vitest';

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
