import type { PendingQuery, Row, TransactionSql } from 'postgres';
import type { BrokerStore } from '../broker-store.js';
import type { ExpiredMessage } from '../records.js';
import { type Column, TABLES, type Table, type TableName } from './postgres-tables.js';

/** One row as written: the key columns, the extra columns, then the packed value. */
export type RowValues = readonly (string | number | Uint8Array)[];

/** A queued change to the store's local copy, replayed in call order once the transaction committed. */
export type MirrorWrite = (mirror: BrokerStore) => Promise<void>;

/**
 * Rows per statement. Each statement has one array parameter per column, so this bounds the size
 * of one parameter (a message row's value is about 0.6 KB in hex), not their number.
 */
const MAX_ROWS = 5_000;

/**
 * The writes of one transaction: every write queued since the previous transaction started, so
 * one or more whole event turns (the store seam's rule 2).
 *
 * Within one atomic commit, queue order only matters per key, so writes are collapsed to the last
 * one of each key (rule 1) and sent as one statement per table and kind: conditional deletes of
 * retention first, then deletes by key, then upserts. Those three never touch the same key: a
 * retention delete turns a put of the same batch into a delete, and a put queued after a retention
 * delete sorts after it anyway.
 */
export class WriteBatch {
  /** Per table, the last write of each key: its row for a put, `null` for a delete. */
  readonly #byTable = new Map<TableName, Map<string, RowValues | null>>();
  /** Retention deletes of rows this batch does not hold: the id index and history of a message. */
  readonly #expired: ExpiredMessage[] = [];
  /** History puts of this batch by message id, for retention deletes queued after them. */
  readonly #historyKeysById = new Map<string, string[]>();
  readonly #mirrorWrites: MirrorWrite[] = [];

  get size(): number {
    return this.#mirrorWrites.length;
  }

  put(table: TableName, row: RowValues, mirrorWrite: MirrorWrite): void {
    const key = keyOf(TABLES[table], row);
    this.#rowsOf(table).set(key, row);
    if (table === 'history') {
      const messageId = row[0] as string;
      const keys = this.#historyKeysById.get(messageId);
      if (keys) keys.push(key);
      else this.#historyKeysById.set(messageId, [key]);
    }
    this.#mirrorWrites.push(mirrorWrite);
  }

  delete(table: TableName, key: RowValues, mirrorWrite: MirrorWrite): void {
    this.#rowsOf(table).set(keyOf(TABLES[table], key), null);
    this.#mirrorWrites.push(mirrorWrite);
  }

  /** Retention: the message, its id-index entry if it names this message, and its history here. */
  expire(message: ExpiredMessage, mirrorWrite: MirrorWrite): void {
    const { topic, offset, messageId } = message;
    this.#rowsOf('messages').set(keyOf(TABLES.messages, [topic, offset]), null);
    const ids = this.#rowsOf('messageIds');
    const idKey = keyOf(TABLES.messageIds, [messageId]);
    const queuedLocation = ids.get(idKey);
    if (queuedLocation && queuedLocation[1] === topic && queuedLocation[2] === offset) ids.set(idKey, null);
    const history = this.#rowsOf('history');
    for (const key of this.#historyKeysById.get(messageId) ?? []) {
      const row = history.get(key);
      if (row && row[4] === topic && row[5] === offset) history.set(key, null);
    }
    this.#expired.push(message);
    this.#mirrorWrites.push(mirrorWrite);
  }

  /** The statements of this batch, to be pipelined inside one transaction. */
  statements(tx: TransactionSql): PendingQuery<Row[]>[] {
    const statements: PendingQuery<Row[]>[] = [];
    if (this.#expired.length > 0) statements.push(...expireStatements(tx, this.#expired));
    for (const [table, rows] of this.#byTable) {
      const deletes: RowValues[] = [];
      const puts: RowValues[] = [];
      for (const [key, row] of rows) {
        if (row === null) deletes.push(splitKey(TABLES[table], key));
        else puts.push(row);
      }
      if (deletes.length > 0) statements.push(...deleteStatements(tx, TABLES[table], deletes));
      if (puts.length > 0) statements.push(...upsertStatements(tx, TABLES[table], puts));
    }
    return statements;
  }

  /** Replay the batch on the local copy, in call order. */
  applyTo(mirror: BrokerStore): void {
    for (const write of this.#mirrorWrites) void write(mirror);
  }

  #rowsOf(table: TableName): Map<string, RowValues | null> {
    let rows = this.#byTable.get(table);
    if (!rows) {
      rows = new Map();
      this.#byTable.set(table, rows);
    }
    return rows;
  }
}

/** A row's key as one string: key columns joined by NUL, which no name contains. */
function keyOf(table: Table, row: RowValues): string {
  if (table.key.length === 1) return String(row[0]);
  let key = String(row[0]);
  for (let column = 1; column < table.key.length; column++) key += `\u0000${String(row[column])}`;
  return key;
}

/** The key columns' values back from {@link keyOf}. */
function splitKey(table: Table, key: string): RowValues {
  const parts = table.key.length === 1 ? [key] : key.split('\u0000');
  return parts.map((part, column) => (table.key[column]?.type === 'bigint' ? Number(part) : part));
}

function chunks<T>(rows: readonly T[]): T[][] {
  if (rows.length <= MAX_ROWS) return [rows as T[]];
  const out: T[][] = [];
  for (let start = 0; start < rows.length; start += MAX_ROWS) out.push(rows.slice(start, start + MAX_ROWS));
  return out;
}

/**
 * Every statement of a batch has a fixed text, one array parameter per column unnested into rows,
 * and is prepared: PostgreSQL parses and plans it once per connection, and postgres.js describes
 * it once. (A multi-row `values` list has a new text for every row count, so each batch size cost
 * a describe round trip, a plan and a cached statement, and binding thousands of parameters.)
 */
const PREPARED = { prepare: true } as const;

const upsertTexts = new Map<Table, string>();
const deleteTexts = new Map<Table, string>();

function upsertText(table: Table): string {
  let text = upsertTexts.get(table);
  if (text === undefined) {
    const columns: Column[] = [...table.key, ...table.extra, { name: 'value', type: 'bytea' }];
    const names = columns.map((column) => column.name).join(', ');
    const arrays = columns.map((column, index) => `$${index + 1}::${column.type}[]`).join(', ');
    const keyList = table.key.map((column) => column.name).join(', ');
    const updates = [...table.extra, { name: 'value' }]
      .map(({ name }) => `${name} = excluded.${name}`)
      .join(', ');
    text = `insert into ${table.name} (${names}) select * from unnest(${arrays}) on conflict (${keyList}) do update set ${updates}`;
    upsertTexts.set(table, text);
  }
  return text;
}

function deleteText(table: Table): string {
  let text = deleteTexts.get(table);
  if (text === undefined) {
    const keyList = table.key.map((column) => column.name).join(', ');
    const arrays = table.key.map((column, index) => `$${index + 1}::${column.type}[]`).join(', ');
    text = `delete from ${table.name} where (${keyList}) in (select * from unnest(${arrays}))`;
    deleteTexts.set(table, text);
  }
  return text;
}

function upsertStatements(
  tx: TransactionSql,
  table: Table,
  rows: readonly RowValues[],
): PendingQuery<Row[]>[] {
  const valueColumn = table.key.length + table.extra.length;
  return chunks(rows).map((chunk) => {
    const parameters: unknown[] = [];
    for (let column = 0; column < valueColumn; column++) parameters.push(chunk.map((row) => row[column]));
    parameters.push(byteaArrayLiteral(chunk, valueColumn));
    return tx.unsafe(upsertText(table), parameters as never, PREPARED);
  });
}

/**
 * A `bytea[]` parameter in PostgreSQL's text form, `{"\\x0a1b…",…}`: postgres.js types an array
 * of buffers as one `bytea`, and hex needs no escaping inside the quotes beyond the doubled backslash.
 */
function byteaArrayLiteral(rows: readonly RowValues[], column: number): string {
  let literal = '{';
  for (let index = 0; index < rows.length; index++) {
    const bytes = rows[index]?.[column] as Uint8Array;
    const hex = (
      Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    ).toString('hex');
    literal += index === 0 ? `"\\\\x${hex}"` : `,"\\\\x${hex}"`;
  }
  return `${literal}}`;
}

function deleteStatements(
  tx: TransactionSql,
  table: Table,
  keys: readonly RowValues[],
): PendingQuery<Row[]>[] {
  return chunks(keys).map((chunk) =>
    tx.unsafe(
      deleteText(table),
      table.key.map((_, index) => chunk.map((key) => key[index])) as never,
      PREPARED,
    ),
  );
}

/** Retention's conditional deletes: id-index entries and history rows that name the expired message. */
function expireStatements(tx: TransactionSql, expired: readonly ExpiredMessage[]): PendingQuery<Row[]>[] {
  const statements: PendingQuery<Row[]>[] = [];
  for (const chunk of chunks(expired)) {
    const ids = chunk.map((message) => message.messageId);
    const topics = chunk.map((message) => message.topic);
    const offsets = chunk.map((message) => message.offset);
    for (const table of [TABLES.messageIds, TABLES.history]) {
      statements.push(
        tx`delete from ${tx(table.name)} t
           using unnest(${ids}::text[], ${topics}::text[], ${offsets}::bigint[]) as d(message_id, topic, msg_offset)
           where t.message_id = d.message_id and t.topic = d.topic and t.msg_offset = d.msg_offset`,
      );
    }
  }
  return statements;
}
