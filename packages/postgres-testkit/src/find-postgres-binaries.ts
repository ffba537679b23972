import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isExecutable, pathDirs } from './path-lookup.js';

/** The PostgreSQL programs a throwaway server needs, from one installation. */
export interface PostgresBinaries {
  readonly initdb: string;
  readonly postgres: string;
  /**
   * The same folder's pg_basebackup, which only a standby needs (`startStandby`); Debian's
   * `postgresql` package installs it, a hand-built server may lack it.
   */
  readonly pgBasebackup: string | undefined;
}

/** Where Debian's packages put each major version: `/usr/lib/postgresql/<major>/bin`, off PATH. */
const DEBIAN_VERSIONS_DIR = '/usr/lib/postgresql';

/**
 * Find `initdb` and `postgres` (and `pg_basebackup` beside them): the newest Debian installation first, then the first PATH folder
 * that holds both (they must come from the same version: initdb writes the data format that its own
 * server reads).
 *
 * @returns their paths, or `undefined` when PostgreSQL is not installed.
 */
export function findPostgresBinaries(): PostgresBinaries | undefined {
  for (const dir of [...debianBinDirs(), ...pathDirs()]) {
    const initdb = join(dir, 'initdb');
    const postgres = join(dir, 'postgres');
    const pgBasebackup = join(dir, 'pg_basebackup');
    if (isExecutable(initdb) && isExecutable(postgres)) {
      return { initdb, postgres, pgBasebackup: isExecutable(pgBasebackup) ? pgBasebackup : undefined };
    }
  }
  return undefined;
}

/** `/usr/lib/postgresql/<major>/bin`, newest major first. */
function debianBinDirs(): string[] {
  let entries: string[];
  try {
    entries = readdirSync(DEBIAN_VERSIONS_DIR);
  } catch {
    return [];
  }
  return entries
    .filter((entry) => /^\d+$/.test(entry))
    .sort((a, b) => Number(b) - Number(a))
    .map((major) => join(DEBIAN_VERSIONS_DIR, major, 'bin'));
}
