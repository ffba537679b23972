import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The folders of PATH, in order. */
export function pathDirs(): string[] {
  return (process.env.PATH ?? '').split(delimiter).filter((dir) => dir !== '');
}

/** The first `name` on PATH that this process may run, or `undefined`. */
export function findOnPath(name: string): string | undefined {
  return pathDirs()
    .map((dir) => join(dir, name))
    .find(isExecutable);
}

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
