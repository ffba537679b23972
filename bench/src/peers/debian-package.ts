import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

const INSTALL_TIMEOUT_MS = 10 * 60_000;

/** Why a peer could not be had; the table prints it in the peer's place. */
export class PeerUnavailableError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PeerUnavailableError';
  }
}

/** Where `name` is: an absolute path as is, else the first match on PATH or in the sbin dirs. */
function locate(name: string): string | undefined {
  if (name.startsWith('/')) return existsSync(name) ? name : undefined;
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
  return dirs
    .filter((dir) => dir !== '')
    .map((dir) => join(dir, name))
    .find((path) => existsSync(path));
}

/**
 * The path of `executable` (an absolute path, or a name looked up on PATH and in /usr/sbin), after
 * installing Debian's `debianPackage` when it is missing and this process is root (`apt-get update
 * && apt-get install -y`, bounded in time). Throws {@link PeerUnavailableError} saying why when it
 * cannot be had.
 */
export function ensureDebianPackage(executable: string, debianPackage: string): string {
  const found = locate(executable);
  if (found !== undefined) return found;
  if (process.getuid?.() !== 0) {
    throw new PeerUnavailableError(`${executable} is missing and installing ${debianPackage} needs root`);
  }
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', debianPackage]]) {
    const result = spawnSync('apt-get', args, {
      encoding: 'utf8',
      timeout: INSTALL_TIMEOUT_MS,
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (result.status !== 0) {
      const lastLine = `${result.stderr ?? ''}${result.error?.message ?? ''}`.trim().split('\n').at(-1);
      throw new PeerUnavailableError(
        `apt-get ${args.join(' ')} failed: ${lastLine || `exit ${result.status}`}`,
      );
    }
  }
  const installed = locate(executable);
  if (installed === undefined) {
    throw new PeerUnavailableError(`${debianPackage} installed but ${executable} is still missing`);
  }
  return installed;
}
