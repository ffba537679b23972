import { open } from 'lmdb';

/** The databases of the LMDB layout, in the order a dump lists them. */
export const DATABASE_NAMES = [
  'meta',
  'topics',
  'groups',
  'cursors',
  'counters',
  'broadcastInstances',
  'messages',
  'messageIds',
  'deliveries',
  'schedule',
  'history',
] as const;

/** Every entry of every database as hex `[key, value]` pairs: the bytes on disk, nothing decoded. */
export type RawDataDir = Record<string, readonly (readonly [key: string, value: string])[]>;

/**
 * Read a closed data directory's entries as raw bytes, the shared-structures entries included,
 * so that a test can compare what a broker wrote with a golden sample byte for byte.
 */
export async function dumpDataDir(path: string): Promise<RawDataDir> {
  const root = open({ path, noSubdir: false, maxDbs: 16 });
  try {
    const dump: Record<string, [string, string][]> = {};
    for (const name of DATABASE_NAMES) {
      const db = root.openDB<Buffer, Buffer>({ name, encoding: 'binary', keyEncoding: 'binary' });
      dump[name] = [...db.getRange({})].map(({ key, value }) => [toHex(key), toHex(value)]);
    }
    return dump;
  } finally {
    await root.close();
  }
}

/** Write raw entries into a new data directory, as a broker of the sample's time left them. */
export async function loadDataDir(path: string, dump: RawDataDir): Promise<void> {
  const root = open({ path, noSubdir: false, maxDbs: 16 });
  try {
    for (const [name, entries] of Object.entries(dump)) {
      const db = root.openDB<Buffer, Buffer>({ name, encoding: 'binary', keyEncoding: 'binary' });
      for (const [key, value] of entries) db.putSync(Buffer.from(key, 'hex'), Buffer.from(value, 'hex'));
    }
  } finally {
    await root.close();
  }
}

function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}
