import postgres from 'postgres';
import { initDataDir } from './init-data-dir.js';
import { databaseUrl, type LaunchedServer, launchServer, requireBinaries } from './launch-server.js';

/** A PostgreSQL server of its own for a test or a bench, on 127.0.0.1 with trust authentication. */
export interface PostgresServer extends AsyncDisposable {
  /** `postgres://<user>@127.0.0.1:<port>/postgres`: the superuser, on the default database. */
  readonly url: string;
  readonly port: number;
  /**
   * `CREATE DATABASE <name>` on a connection of its own, closed after.
   *
   * @returns the URL of the new database.
   * @throws Error when `name` does not match `/^[a-z_][a-z0-9_]{0,62}$/`, the database exists, the
   *   server is stopped, or it is a standby (read-only until promoted).
   */
  createDatabase(name: string): Promise<string>;
  /**
   * SIGKILL the server now, as the crash of its machine would (`kill -9` of the postmaster: its
   * sessions end as they notice, none is answered again), and resolve once it has exited. Its
   * data directory stays until {@link stop}. Idempotent.
   */
  kill(): Promise<void>;
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

/**
 * Start a throwaway PostgreSQL server: a new cluster in a temporary directory, served by the
 * `postgres` binary as a child process on a free port of 127.0.0.1. As root, initdb and the server
 * run as the `postgres` OS user (they refuse to run as root).
 *
 * @throws Error when PostgreSQL is not installed (the message says what to install), or when
 *   initdb or the server fails (the message quotes their last output).
 */
export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  const launched = await launchServer(requireBinaries(), options.log, (target) =>
    initDataDir({
      initdb: target.binaries.initdb,
      dataDir: target.dataDir,
      cwd: target.baseDir,
      identity: target.identity,
      log: target.log,
    }),
  );
  return runningServer(launched);
}

/** The handle of a launched server: its URL, its databases, and the ways to end it. */
export function runningServer({ process: server, port, removeFiles }: LaunchedServer): PostgresServer {
  const url = databaseUrl(port, 'postgres');
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= server.stop().then(removeFiles);
    return stopping;
  };
  return {
    url,
    port,
    async createDatabase(name) {
      if (!DATABASE_NAME.test(name)) {
        throw new Error(`invalid database name ${JSON.stringify(name)}: it must match ${DATABASE_NAME}`);
      }
      if (stopping || server.hasExited)
        throw new Error(`cannot create database ${name}: the server is stopped`);
      const sql = postgres(url, { max: 1, onnotice: () => {} });
      try {
        // Quoted, so a keyword is a name too; the pattern above keeps it to plain characters.
        await sql.unsafe(`CREATE DATABASE "${name}"`);
      } finally {
        await sql.end();
      }
      return databaseUrl(port, name);
    },
    async kill() {
      server.kill();
      await server.whenExited();
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
