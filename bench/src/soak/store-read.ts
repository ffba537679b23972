import { open } from 'lmdb';
import type { StoredEntry } from './accounting.js';

/** Where the broker's store keeps its shared msgpack structures (apps/broker/src/store/lmdb-store.ts). */
const STRUCTURES_KEY = Symbol.for('ricochet.structures');

/**
 * Read topics' logs straight from a broker's data directory, after the broker is gone: what is on
 * disk after the last SIGKILL, not what a process still holds in memory. Reads the `messages`
 * database of store layout 1 (keys `[topic, offset]`) the way the broker opens it.
 */
export function readStoredLogs(dataDir: string, topics: readonly string[]): Map<string, StoredEntry[]> {
  const root = open({ path: dataDir, noSubdir: false, maxDbs: 16, readOnly: true });
  try {
    const messages = root.openDB<{ messageId: string; offset: number }, [string, number]>({
      name: 'messages',
      encoding: 'msgpack',
      sharedStructuresKey: STRUCTURES_KEY,
    });
    const logs = new Map<string, StoredEntry[]>();
    for (const topic of topics) {
      const log: StoredEntry[] = [];
      for (const { key, value } of messages.getRange({
        start: [topic, 0],
        end: [topic, Number.MAX_SAFE_INTEGER],
      })) {
        // The key's offset is where the message sits; the value's is what the broker wrote into it.
        if (value.offset !== key[1])
          throw new Error(`${topic}: offset ${key[1]} holds a message of offset ${value.offset}`);
        log.push({ messageId: value.messageId, offset: key[1] });
      }
      logs.set(topic, log);
    }
    return logs;
  } finally {
    void root.close();
  }
}
