import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root directory, found from this file's location. */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** An absolute path inside the repository. */
export function repoPath(...segments: string[]): string {
  return resolve(REPO_ROOT, ...segments);
}
