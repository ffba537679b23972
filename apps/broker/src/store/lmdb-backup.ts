import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';

/** What {@link backupLmdbDataDir} wrote. */
export interface BackupResult {
  /** The data file of the copy. */
  readonly file: string;
  readonly bytes: number;
}

/**
 * Copy a data directory into `to` (which must not exist or be empty) as one consistent, compacted
 * LMDB environment, while a broker may be running on it.
 *
 * LMDB lets a second process open an environment and read it alongside the writer: the copy runs
 * in one read transaction (`mdb_env_copy2` with `MDB_CP_COMPACT`, which lmdb-js exposes as
 * `backup(path, true)`), so it is the state of one commit — every message, cursor, delivery
 * record, schedule entry and history entry as of that commit, and nothing half-written. It is the
 * state a `kill -9` at that commit would have left, which a broker started on it recovers from as
 * after any crash. Compacting leaves free pages out and renumbers the rest, so the copy is as
 * small as the live data. The read transaction holds the pages it reads for the length of the
 * copy: the broker's data file may grow meanwhile, by what it writes during the copy.
 */
export async function backupLmdbDataDir(dataDir: string, to: string): Promise<BackupResult> {
  if (!existsSync(join(dataDir, 'data.mdb')))
    throw new Error(`${dataDir} holds no Ricochet data (no data.mdb)`);
  if (existsSync(to) && readdirSync(to).length > 0)
    throw new Error(`${to} is not empty: a backup goes into a new or empty directory`);
  mkdirSync(to, { recursive: true });
  // Read-only: this process never writes to the broker's environment, and opens no database in it.
  const root = open({ path: dataDir, noSubdir: false, readOnly: true, maxDbs: 16 });
  const file = join(to, 'data.mdb');
  try {
    // An environment in a directory (not `noSubdir`) copies into a directory too: `to/data.mdb`.
    await root.backup(to, true);
  } finally {
    await root.close();
  }
  return { file, bytes: statSync(file).size };
}
