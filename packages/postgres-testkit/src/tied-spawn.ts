import { type ChildProcessByStdio, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { findOnPath } from './path-lookup.js';
import type { ServerIdentity } from './server-identity.js';

/** What {@link spawnTied} needs besides the program and its arguments. */
export interface TiedSpawnOptions {
  readonly cwd: string;
  /** The user to run as; `undefined` for this process's own. */
  readonly identity: ServerIdentity | undefined;
  /** @default this process's environment */
  readonly env?: NodeJS.ProcessEnv;
}

/**
 * Spawn `command` so that it dies with this process even when no hook of ours can run (SIGKILL, the
 * OOM killer, a vitest worker thread that ends): util-linux's `setpriv --pdeathsig KILL` asks the
 * kernel to SIGKILL it when the thread that spawned it ends, then execs `command` in the same
 * process, so its pid and signals are the program's own. Where setpriv is missing (not Linux),
 * `command` runs directly and only the exit hooks stand between it and an orphan.
 */
export function spawnTied(
  command: string,
  args: readonly string[],
  options: TiedSpawnOptions,
): ChildProcessByStdio<null, Readable, Readable> {
  const setpriv = findOnPath('setpriv');
  const [program, programArgs] = setpriv
    ? [setpriv, ['--pdeathsig', 'KILL', '--', command, ...args]]
    : [command, [...args]];
  return spawn(program, programArgs, {
    cwd: options.cwd,
    ...(options.env ? { env: options.env } : {}),
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.identity ?? {}),
  });
}
