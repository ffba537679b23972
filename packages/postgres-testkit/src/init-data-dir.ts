import { OutputTail } from './output-tail.js';
import type { ServerIdentity } from './server-identity.js';
import { spawnTied } from './tied-spawn.js';

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
 * Create a cluster in `dataDir` with trust authentication for {@link SUPERUSER}.
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
  const child = spawnTied(options.initdb, args, { cwd: options.cwd, identity: options.identity });
  const output = new OutputTail(options.log);
  output.follow(child.stdout, 'initdb: ');
  output.follow(child.stderr, 'initdb: ');
  const result = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolve, reject) => {
      child.once('error', reject);
      // 'close', not 'exit': the last output lines are read by then.
      child.once('close', (code, signal) => resolve({ code, signal }));
    },
  );
  if (result.code !== 0) {
    throw new Error(
      `initdb failed (${result.signal ?? `exit code ${result.code}`}): ${args.join(' ')}\n${output.text()}`,
    );
  }
}
