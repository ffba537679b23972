import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findPostgresBinaries } from './find-postgres-binaries.js';
import { initDataDir } from './init-data-dir.js';
import { PostgresProcess } from './postgres-process.js';
import { serverIdentity } from './server-identity.js';

/** initdb takes a few seconds on a busy 2-core machine: a generous bound, never the expected time. */
const TEST_TIMEOUT_MS = 120_000;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function listenOnFreePort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port };
}

describe('PostgresProcess', () => {
  it(
    'exits and reports a lost port when another process holds its port (startPostgres then retries)',
    async () => {
      const binaries = findPostgresBinaries();
      if (binaries === undefined)
        throw new Error('PostgreSQL is not installed: apt-get install -y postgresql');
      const identity = await serverIdentity();
      const baseDir = await mkdtemp(join(tmpdir(), 'ricochet-postgres-'));
      cleanups.push(() => rm(baseDir, { recursive: true, force: true }));
      if (identity) await chown(baseDir, identity.uid, identity.gid);
      const dataDir = join(baseDir, 'data');
      await initDataDir({ initdb: binaries.initdb, dataDir, cwd: baseDir, identity, log: undefined });
      const holder = await listenOnFreePort();
      cleanups.push(() => new Promise<void>((resolve) => holder.server.close(() => resolve())));

      const server = PostgresProcess.spawn({
        postgres: binaries.postgres,
        dataDir,
        socketDir: baseDir,
        port: holder.port,
        identity,
        log: undefined,
      });
      cleanups.push(() => server.stop());
      await server.whenExited();

      const report = await server.exitReport();
      expect(report.lostPort).toBe(true);
      expect(report.description).toMatch(/^exited with code 1; its last output:\n.*Address already in use/s);
    },
    TEST_TIMEOUT_MS,
  );
});
