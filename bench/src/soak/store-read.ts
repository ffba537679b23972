import { decodeStoredMessage, isStoredMessageRecord } from '@ricochet/broker';
import { open } from 'lmdb';
import { unpack } from 'msgpackr';
import postgres from 'postgres';
import type { StoredEntry } from './accounting.js';

/** Where the broker's store keeps its shared msgpack structures (apps/broker/src/store/lmdb-store.ts). */
const STRUCTURES_KEY = Symbol.for('ricochet.structures');

/**
 * Read topics' logs straight from a broker's data directory, after the broker is gone: what is on
 * disk after the last SIGKILL, not what a process still holds in memory. Reads the `messages`
 * database (keys `[topic, offset]`) the way the broker opens it: layout 2's records, and layout
 * 1's messages in a directory that began in layout 1.
 */
export function readStoredLogs(dataDir: string, topics: readonly string[]): Map<string, StoredEntry[]> {
  const root = open({ path: dataDir, noSubdir: false, maxDbs: 16, readOnly: true });
  try {
    const messages = root.openDB<Uint8Array | { messageId: string; offset: number }, [string, number]>({
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
        if (value instanceof Uint8Array) {
          log.push({ messageId: decodeStoredMessage(value, topic).messageId, offset: key[1] });
          continue;
        }
        // Layout 1: the key's offset is where the message sits; the value's is what the broker wrote into it.
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

/**
 * The same from a PostgreSQL store (`--store postgres://…`), once every broker on it is gone: the
 * `ricochet_messages` table, whose values are the stored messages' records (or, in rows written
 * before the database's layout 3, the messages packed with plain MessagePack).
 */
export async function readStoredLogsFromPostgres(
  url: string,
  topics: readonly string[],
  storeQueues = 1,
): Promise<Map<string, StoredEntry[]>> {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    const logs = new Map<string, StoredEntry[]>();
    for (const topic of topics) {
      const log: StoredEntry[] = [];
      // A split store (`--store-queues`): queue q's rows are in schema ricochet_q<q>, and a client
      // knows its messages by their topic offsets, the queue's interleaved (`offset × queues + q`).
      for (let queue = 0; queue < storeQueues; queue++) {
        const table = queue === 0 ? 'ricochet_messages' : `ricochet_q${queue}.ricochet_messages`;
        const rows = await sql.unsafe<{ msg_offset: string; value: Uint8Array }[]>(
          `select msg_offset, value from ${table} where topic = $1 order by msg_offset`,
          [topic],
        );
        for (const row of rows) {
          const offset = Number(row.msg_offset);
          // A row holds a layout 2 record, or (written before the database's layout 3) a plain map.
          const value = isStoredMessageRecord(row.value)
            ? decodeStoredMessage(row.value)
            : (unpack(row.value) as { messageId: string; offset: number });
          if (value.offset !== offset)
            throw new Error(`${topic}: offset ${offset} holds a message of offset ${value.offset}`);
          log.push({ messageId: value.messageId, offset: offset * storeQueues + queue });
        }
      }
      logs.set(
        topic,
        log.sort((a, b) => a.offset - b.offset),
      );
    }
    return logs;
  } finally {
    await sql.end({ timeout: 5 });
  }
}
