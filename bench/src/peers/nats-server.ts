import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@ricochet/postgres-testkit';
import { ensureDebianPackage } from './debian-package.js';
import { type ServerProcess, startServerProcess } from './server-process.js';

const READY_TIMEOUT_MS = 30_000;

export interface NatsServer extends ServerProcess {
  readonly url: string;
  /** How its file store reaches the disk, as configured (the table's note prints it). */
  readonly durability: string;
}

/** Whether this nats-server takes `sync_interval: always` (2.10 and later); found once. */
let syncAlwaysSupported: boolean | undefined;

/**
 * nats-server with JetStream, file storage in a fresh temp dir, bound to 127.0.0.1 on a free port.
 * Our broker fsyncs every commit before it acknowledges a send: asked for the same with
 * `sync_interval: always` where the server knows the option; older servers (Debian bookworm ships
 * 2.9) have no per-message fsync, so they run as configured by default and `durability` says so.
 */
export async function startNatsServer(): Promise<NatsServer> {
  const executable = ensureDebianPackage('nats-server', 'nats-server');
  if (syncAlwaysSupported !== false) {
    try {
      const server = await startWith(executable, true);
      syncAlwaysSupported = true;
      return server;
    } catch (error) {
      if (!String((error as Error).message).includes('sync_interval')) throw error;
      syncAlwaysSupported = false;
    }
  }
  return startWith(executable, false);
}

async function startWith(executable: string, syncAlways: boolean): Promise<NatsServer> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-bench-nats-'));
  const port = await freePort();
  const config = join(dataDir, 'nats.conf');
  writeFileSync(
    config,
    [
      `listen: 127.0.0.1:${port}`,
      `jetstream {`,
      `  store_dir: ${JSON.stringify(join(dataDir, 'jetstream'))}`,
      ...(syncAlways ? ['  sync_interval: always'] : []),
      `}`,
    ].join('\n'),
  );
  const server = await startServerProcess(executable, ['-c', config], {
    ready: /Server is ready/,
    readyTimeoutMs: READY_TIMEOUT_MS,
    dataDir,
  });
  const version = /Version:\s+(\S+)/.exec(server.output())?.[1] ?? '?';
  const durability = syncAlways
    ? `nats-server ${version}, file storage, sync_interval: always (fsync per write, like ours)`
    : `nats-server ${version}, file storage, default sync: writes reach the OS at once but are fsynced only every 2 min (this version has no sync_interval option), so no fsync per message, unlike ours`;
  return Object.assign(server, { url: `nats://127.0.0.1:${port}`, durability });
}
