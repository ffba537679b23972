import { unpack } from 'msgpackr';
import type { Sql } from 'postgres';
import type { BrokerStore } from '../broker-store.js';
import type {
  BroadcastInstanceRecord,
  CursorRecord,
  GroupCounters,
  HistoryRecord,
  MessageLocation,
  ScheduleEntry,
  StoredMessage,
} from '../records.js';
import { fromStoredDelivery, type StoredDeliveryV1 } from '../schema/stored-delivery.js';
import { fromStoredGroup, type StoredGroupV1 } from '../schema/stored-group.js';
import { fromStoredTopic, type StoredTopicV1 } from '../schema/stored-topic.js';
import { TABLE_NAMES, TABLES, type TableName } from './postgres-tables.js';

/** Rows fetched per round trip while loading. */
const FETCH_ROWS = 2_000;
/** Local writes per local transaction while loading, so no single LMDB batch grows unbounded. */
const WRITES_PER_COMMIT = 20_000;

type LoadedRow = Record<string, unknown> & { readonly value: Uint8Array };

/** How each table's rows go into the local copy, through the seam like any write. */
const loaders: Record<TableName, (mirror: BrokerStore, row: LoadedRow) => Promise<void>> = {
  topics: (mirror, row) => mirror.putTopic(fromStoredTopic(unpack(row.value) as StoredTopicV1)),
  groups: (mirror, row) => mirror.putGroup(fromStoredGroup(unpack(row.value) as StoredGroupV1)),
  cursors: (mirror, row) => mirror.putCursor(unpack(row.value) as CursorRecord),
  counters: (mirror, row) => mirror.putGroupCounters(unpack(row.value) as GroupCounters),
  broadcastInstances: (mirror, row) =>
    mirror.putBroadcastInstance(unpack(row.value) as BroadcastInstanceRecord),
  messages: (mirror, row) => mirror.appendMessage(unpack(row.value) as StoredMessage),
  messageIds: (mirror, row) =>
    mirror.putMessageLocation(row.message_id as string, unpack(row.value) as MessageLocation),
  deliveries: (mirror, row) =>
    mirror.putDelivery(
      { group: row.grp as string, topic: row.topic as string, offset: Number(row.msg_offset) },
      fromStoredDelivery(unpack(row.value) as StoredDeliveryV1),
    ),
  schedule: (mirror, row) =>
    mirror.putSchedule(
      [row.grp as string, Number(row.due_at), row.topic as string, Number(row.msg_offset)],
      unpack(row.value) as ScheduleEntry,
    ),
  history: (mirror, row) =>
    mirror.appendHistory(
      row.message_id as string,
      unpack(row.value) as HistoryRecord & { readonly lease: number },
    ),
};

/**
 * Copy every table into the (empty) local copy, in one repeatable-read snapshot, so the engine
 * starts from one consistent state of the store; the caller holds the lease, so nothing else
 * writes meanwhile.
 */
export async function loadMirror(sql: Sql, mirror: BrokerStore): Promise<void> {
  await sql.begin('isolation level repeatable read read only', async (tx) => {
    let written = 0;
    for (const name of TABLE_NAMES) {
      const table = TABLES[name];
      const load = loaders[name];
      const columns = [...table.key, ...table.extra].map((column) => column.name);
      const query = tx.unsafe<LoadedRow[]>(`select ${[...columns, 'value'].join(', ')} from ${table.name}`);
      for await (const rows of query.cursor(FETCH_ROWS)) {
        for (const row of rows) void load(mirror, row);
        written += rows.length;
        if (written >= WRITES_PER_COMMIT) {
          written = 0;
          await mirror.committed();
        }
      }
    }
  });
  await mirror.committed();
}
