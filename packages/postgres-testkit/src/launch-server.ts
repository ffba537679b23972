import { rmSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findPostgresBinaries, type PostgresBinaries } from './find-postgres-binaries.js';
import { freePort } from './free-port.js';
import { SUPERUSER } from './init-data-dir.js';
import { PostgresProcess } from './postgres-process.js';
import { onProcessEnd } from './process-end-hooks.js';
import { type ServerIdentity, serverIdentity } from './server-identity.js';
import { READY_WITHIN_MS, waitUntilReady } from './wait-until-ready.js';

/** Where a new server's cluster goes, for the step that creates it (initdb, pg_basebackup). */
export interface DataDirTarget {
  readonly binaries: PostgresBinaries;
  /** To be created; its parent exists and belongs to `identity`. */
  readonly dataDir: string;
  /** The server's own temporary folder (the data directory's parent), for working directories. */
  readonly baseDir: string;
  readonly identity: ServerIdentity | undefined;
  readonly log: ((line: string) => void) | undefined;
}

/** A server up and answering queries, and how to remove its files once it is stopped. */
export interface LaunchedServer {
  readonly process: PostgresProcess;
  readonly port: number;
  /** Remove the server's temporary folder; only once its process has exited. */
  readonly removeFiles: () => Promise<void>;
}

/** Ports to try: another process may take the free port we picked before the server binds it. */
const PORT_ATTEMPTS = 5;

/** `postgres://<superuser>@127.0.0.1:<port>/<database>`: every URL the kit hands out. */
export function databaseUrl(port: number, database: string): string {
  return `postgres://${SUPERUSER}@127.0.0.1:${port}/${database}`;
}

/**
 * PostgreSQL's programs, or an error that says what to install.
 *
 * @throws Error when PostgreSQL is not installed.
 */
export function requireBinaries(): PostgresBinaries {
  const binaries = findPostgresBinaries();
  if (binaries === undefined) {
    throw new Error(
      'PostgreSQL is not installed: no initdb and postgres in /usr/lib/postgresql/<version>/bin or on PATH. ' +
        'Install it with `apt-get install -y postgresql` (as root; Debian or Ubuntu).',
    );
  }
  return binaries;
}

/**
 * A server of its own in a new temporary folder: `makeDataDir` creates its cluster, then the
 * `postgres` binary serves it as a child process on a free port of 127.0.0.1, until it answers a
 * query. As root, every program runs as the `postgres` OS user (they refuse to run as root).
 *
 * @throws Error when `makeDataDir` or the server fails (the message quotes their last output);
 *   nothing is left running and the folder is removed.
 */
export async function launchServer(
  binaries: PostgresBinaries,
  log: ((line: string) => void) | undefined,
  makeDataDir: (target: DataDirTarget) => Promise<void>,
): Promise<LaunchedServer> {
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
  const removeFiles = async () => {
    removeEndHook();
    await rm(baseDir, { recursive: true, force: true, maxRetries: 3 });
  };
  try {
    if (identity) await chown(baseDir, identity.uid, identity.gid);
    const dataDir = join(baseDir, 'data');
    await makeDataDir({ binaries, dataDir, baseDir, identity, log });
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      server = PostgresProcess.spawn({
        postgres: binaries.postgres,
        dataDir,
        socketDir: baseDir,
        port,
        identity,
        log,
      });
      const readiness = await waitUntilReady(server, databaseUrl(port, 'postgres'), port);
      if (readiness === 'ready') return { process: server, port, removeFiles };
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
    await removeFiles();
    throw error;
  }
}
