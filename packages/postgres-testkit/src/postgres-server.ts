import { rmSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { findPostgresBinaries } from './find-postgres-binaries.js';
import { freePort } from './free-port.js';
import { initDataDir, SUPERUSER } from './init-data-dir.js';
import { PostgresProcess } from './postgres-process.js';
import { onProcessEnd } from './process-end-hooks.js';
import { serverIdentity } from './server-identity.js';
import { READY_WITHIN_MS, waitUntilReady } from './wait-until-ready.js';

/** A PostgreSQL server of its own for a test or a bench, on 127.0.0.1 with trust authentication. */
export interface PostgresServer extends AsyncDisposable {
  /** `postgres://<user>@127.0.0.1:<port>/postgres`: the superuser, on the default database. */
  readonly url: string;
  readonly port: number;
  /**
   * `CREATE DATABASE <name>` on a connection of its own, closed after.
   *
   * @returns the URL of the new database.
   * @throws Error when `name` does not match `/^[a-z_][a-z0-9_]{0,62}$/`, the database exists, or
   *   the server is stopped.
   */
  createDatabase(name: string): Promise<string>;
  /**
   * Stop the server (fast shutdown, SIGKILL after 10 s), wait for it to exit, and remove its data
   * directory. Idempotent; `[Symbol.asyncDispose]` does the same.
   */
  stop(): Promise<void>;
}

/** Options of {@link startPostgres}. */
export interface StartPostgresOptions {
  /**
   * Receives every output line of initdb and the server, prefixed with the program's name.
   * @default no logging
   */
  readonly log?: (line: string) => void;
}

/** The names {@link PostgresServer.createDatabase} accepts: lower-case identifiers, 63 bytes at most. */
const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** Ports to try: another process may take the free port we picked before the server binds it. */
const PORT_ATTEMPTS = 5;

/**
 * Start a throwaway PostgreSQL server: a new cluster in a temporary directory, served by the
 * `postgres` binary as a child process on a free port of 127.0.0.1. As root, initdb and the server
 * run as the `postgres` OS user (they refuse to run as root).
 *
 * @throws Error when PostgreSQL is not installed (the message says what to install), or when
 *   initdb or the server fails (the message quotes their last output).
 */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  const binaries = findPostgresBinaries();
  if (binaries === undefined) {
    throw new Error(
      'PostgreSQL is not installed: no initdb and postgres in /usr/lib/postgresql/<version>/bin or on PATH. ' +
        'Install it with `apt-get install -y postgresql` (as root; Debian or Ubuntu).',
    );
  }
  const identity = await serverIdentity();
  const baseDir = await mkdtemp(join(tmpdir(), 'ricochet-postgres-'));
  let server: PostgresProcess | undefined;
  // A server still running when this process ends (a test that never stopped it): kill it, which
  // its own hook does too but maybe later, then remove its files. Best effort: nothing can wait here.
  const removeEndHook = onProcessEnd(() => {
    server?.kill();
    try {
      rmSync(baseDir, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // The process is ending; a leftover temporary directory is all that is lost.
    }
  });
  const removeBaseDir = async () => {
    removeEndHook();
    await rm(baseDir, { recursive: true, force: true, maxRetries: 3 });
  };
  try {
    if (identity) await chown(baseDir, identity.uid, identity.gid);
    const dataDir = join(baseDir, 'data');
    await initDataDir({ initdb: binaries.initdb, dataDir, cwd: baseDir, identity, log: options.log });
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      server = PostgresProcess.spawn({
        postgres: binaries.postgres,
        dataDir,
        socketDir: baseDir,
        port,
        identity,
        log: options.log,
      });
      const url = databaseUrl(port, 'postgres');
      const readiness = await waitUntilReady(server, url, port);
      if (readiness === 'ready') return runningServer(server, port, removeBaseDir);
      await server.stop();
      const report = await server.exitReport();
      if (readiness === 'exited' && report.lostPort && attempt < PORT_ATTEMPTS) continue;
      throw new Error(
        readiness === 'exited'
          ? `PostgreSQL exited while starting on port ${port}: ${report.description}`
          : `PostgreSQL did not answer a query within ${READY_WITHIN_MS} ms on port ${port}; stopped it: ${report.description}`,
      );
    }
  } catch (error) {
    await server?.stop();
    await removeBaseDir();
    throw error;
  }
}

function databaseUrl(port: number, database: string): string {
  return `postgres://${SUPERUSER}@127.0.0.1:${port}/${database}`;
}

function runningServer(
  server: PostgresProcess,
  port: number,
  removeBaseDir: () => Promise<void>,
): PostgresServer {
  const url = databaseUrl(port, 'postgres');
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= server.stop().then(removeBaseDir);
    return stopping;
  };
  return {
    url,
    port,
    async createDatabase(name) {
      if (!DATABASE_NAME.test(name)) {
        throw new Error(`invalid database name ${JSON.stringify(name)}: it must match ${DATABASE_NAME}`);
      }
      if (stopping) throw new Error(`cannot create database ${name}: the server is stopped`);
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      try {
        // Quoted, so a keyword is a name too; the pattern above keeps it to plain characters.
        await sql.unsafe(`CREATE DATABASE "${name}"`);
      } finally {
        await sql.end();
      }
      return databaseUrl(port, name);
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
