import { runToEnd } from './run-to-end.js';
import type { ServerIdentity } from './server-identity.js';

/** The superuser initdb creates; every URL the kit hands out names it. */
export const SUPERUSER = 'ricochet';

/** What {@link initDataDir} needs. */
export interface InitDataDirOptions {
  readonly initdb: string;
  /** Created by initdb; its parent must exist and belong to `identity`. */
  readonly dataDir: string;
  /** Where initdb runs (its working directory), a folder `identity` can enter. */
  readonly cwd: string;
  readonly identity: ServerIdentity | undefined;
  readonly log: ((line: string) => void) | undefined;
}

/**
 * Create a cluster in `dataDir` with trust authentication for {@link SUPERUSER}, on TCP and for
 * replication connections alike (initdb's `pg_hba.conf` lists both for 127.0.0.1).
 *
 * `--no-sync` only skips initdb's own final flush of the files it wrote: a test server's cluster is
 * thrown away if the machine crashes anyway, while the server still runs with `fsync=on`.
 *
 * @throws Error with initdb's last output lines when it fails.
 */
export async function initDataDir(options: InitDataDirOptions): Promise<void> {
  const args = [
    ...['-D', options.dataDir, '-U', SUPERUSER, '--auth=trust'],
    ...['-E', 'UTF8', '--no-locale', '--no-sync'],
  ];
  await runToEnd(options.initdb, args, {
    name: 'initdb',
    cwd: options.cwd,
    identity: options.identity,
    log: options.log,
  });
}
