import { unpack } from 'msgpackr';
import type { BrokerStore } from '../broker-store.js';
import type {
  BroadcastInstanceRecord,
  CursorRecord,
  GroupCounters,
  HistoryRecord,
  ScheduleEntry,
} from '../records.js';
import { fromStoredDelivery, type StoredDeliveryV1 } from '../schema/stored-delivery.js';
import { fromStoredGroup, type StoredGroupV1 } from '../schema/stored-group.js';
import { fromStoredTopic, type StoredTopicV1 } from '../schema/stored-topic.js';
import { BinaryCopyParser } from './binary-copy.js';
import type { TransactionSql } from './driver.js';
import type { IdIndexRebuild } from './id-index-rebuild.js';
import { messageOfRow } from './message-rows.js';
import { type Column, TABLES, type Table, type TableName } from './postgres-tables.js';

/** A row as `binary-copy.ts` decodes it: each column by name (text a string, bigint a number), and the packed value. */
export type LoadedRow = Record<string, unknown> & { readonly value: Uint8Array };

export type Loader = (mirror: BrokerStore, row: LoadedRow) => Promise<void>;

/** How each table's rows go into the local copy, through the seam like any write. */
export function loadersFor(ids: IdIndexRebuild): Record<TableName, Loader> {
  return {
    topics: (mirror, row) => mirror.putTopic(fromStoredTopic(unpack(row.value) as StoredTopicV1)),
    groups: (mirror, row) => mirror.putGroup(fromStoredGroup(unpack(row.value) as StoredGroupV1)),
    cursors: (mirror, row) => mirror.putCursor(unpack(row.value) as CursorRecord),
    counters: (mirror, row) => mirror.putGroupCounters(unpack(row.value) as GroupCounters),
    broadcastInstances: (mirror, row) =>
      mirror.putBroadcastInstance(unpack(row.value) as BroadcastInstanceRecord),
    messages: (mirror, row) => {
      const message = messageOfRow(row.value);
      ids.add(message);
      return mirror.appendMessage(message);
    },
    deliveries: (mirror, row) =>
      mirror.putDelivery(
        { group: row.grp as string, topic: row.topic as string, offset: row.msg_offset as number },
        fromStoredDelivery(unpack(row.value) as StoredDeliveryV1),
      ),
    schedule: (mirror, row) =>
      mirror.putSchedule(
        [row.grp as string, row.due_at as number, row.topic as string, row.msg_offset as number],
        unpack(row.value) as ScheduleEntry,
      ),
    history: (mirror, row) =>
      mirror.appendHistory(
        row.message_id as string,
        unpack(row.value) as HistoryRecord & { readonly lease: number },
      ),
  };
}

/** The order a table's rows are read in, where it matters: the id index rebuild needs the messages by key. */
const ORDER_BY: Partial<Record<TableName, string>> = { messages: 'topic, msg_offset' };

/** The columns of `table` a load reads: its key, its extra columns, then the packed value. */
export function loadedColumns(table: Table): readonly Column[] {
  return [...table.key, ...table.extra];
}

/** The `select` of every row of `table` (in key order where it matters), for {@link loadRows}. */
export function selectAll(name: TableName): string {
  const table = TABLES[name];
  const orderBy = ORDER_BY[name];
  return `select ${selectList(table)} from ${table.name}${orderBy ? ` order by ${orderBy}` : ''}`;
}

/** The column list of a load's `select` of `table`. */
export function selectList(table: Table): string {
  return [...loadedColumns(table).map((column) => column.name), 'value'].join(', ');
}

/**
 * Stream the rows `select` gives (the columns of {@link selectList}) into the local copy, and
 * resolve with how many there were. The COPY
 * stream is read in flowing mode and each chunk handled at once: the copy's writer thread commits
 * in parallel, faster than this thread decodes, so its transactions stay small. It is paused only
 * while the id index rebuild is full, until the copy committed what it holds. (Pausing for each
 * commit every 20,000 rows made a load 15 % slower.) `select` is inlined in a `COPY`, which takes
 * no parameters.
 */
export async function loadRows(
  tx: TransactionSql,
  table: Table,
  select: string,
  load: Loader,
  mirror: BrokerStore,
  ids: IdIndexRebuild,
): Promise<number> {
  const columns = loadedColumns(table);
  let rows = 0;
  const stream = await tx.unsafe(`copy (${select}) to stdout (format binary)`).readable();
  const parser = new BinaryCopyParser([...columns.map((column) => column.type), 'bytea']);
  return new Promise<number>((resolve, reject) => {
    const fail = (error: unknown) =>
      stream.destroy(error instanceof Error ? error : new Error(String(error)));
    stream.on('data', (chunk: Buffer) => {
      try {
        for (const fields of parser.push(chunk)) {
          const row: Record<string, unknown> = { value: fields[columns.length] };
          for (let i = 0; i < columns.length; i++) row[(columns[i] as Column).name] = fields[i];
          void load(mirror, row as LoadedRow);
          rows++;
        }
      } catch (error) {
        fail(error);
        return;
      }
      // Between chunks: what the copy has not committed yet comes whole in a later one.
      if (ids.full) {
        stream.pause();
        mirror.committed().then(() => {
          ids.committed();
          stream.resume();
        }, fail);
      }
    });
    stream.once('error', reject);
    stream.once('end', () => {
      // postgres.js pauses the connection's socket when a push is refused (rows that came before
      // this handler was attached) and resumes it only from the stream's _read, which a stream
      // that has ended never calls: resume it here, or the next query waits forever.
      stream._read(0);
      try {
        parser.end();
        resolve(rows);
      } catch (error) {
        reject(error);
      }
    });
  });
}
