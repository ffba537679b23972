import type { BrokerStore } from '../broker-store.js';
import type { ExpiredMessage } from '../records.js';
import { arrayLiteral } from './array-literal.js';
import type { PendingQuery, Row, TransactionSql } from './driver.js';
import {
  type Column,
  ROW_SEQUENCE,
  type RowValues,
  TABLE_NAMES,
  TABLES,
  type Table,
  type TableName,
} from './postgres-tables.js';

/** A queued change to the store's local copy, replayed in call order once the transaction committed. */
export type MirrorWrite = (mirror: BrokerStore) => Promise<void>;

/**
 * Rows per statement. Each statement has one array parameter per column, so this bounds the size
 * of one parameter (a message row's value is about 0.6 KB in hex), not their number.
 */
const MAX_ROWS = 5_000;

/** How long one turn of replaying a committed batch on the local copy may hold the loop, in ms. */
export const REPLAY_TURN_BUDGET_MS = 1;
/** Writes replayed between two readings of the clock. */
const REPLAY_CLOCK_EVERY = 64;

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
  /** Retention deletes of rows this batch does not hold: the history of a message. */
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

  /**
   * A write to the local copy only, replayed in call order with the others: what the store keeps
   * in PostgreSQL elsewhere (the id index, rebuilt from the messages at load).
   */
  local(mirrorWrite: MirrorWrite): void {
    this.#mirrorWrites.push(mirrorWrite);
  }

  /** Retention: the message, and its history rows here and in the table. */
  expire(message: ExpiredMessage, mirrorWrite: MirrorWrite): void {
    const { topic, offset, messageId } = message;
    this.#rowsOf('messages').set(keyOf(TABLES.messages, [topic, offset]), null);
    const history = this.#rowsOf('history');
    for (const key of this.#historyKeysById.get(messageId) ?? []) {
      const row = history.get(key);
      if (row && row[4] === topic && row[5] === offset) history.set(key, null);
    }
    this.#expired.push(message);
    this.#mirrorWrites.push(mirrorWrite);
  }

  /**
   * What this batch writes of the tables a standby follows (`warm-copy.ts`), for the feed to the
   * standbys (`standby-feed.ts`): retention's deletes, then the messages and history rows written,
   * each as its packed value (a history row with its message's id). Rows are only written to these
   * tables or deleted by retention, so nothing else changes them.
   */
  followedWrites(): FollowedWrites {
    const messages: Uint8Array[] = [];
    for (const row of this.#byTable.get('messages')?.values() ?? []) {
      if (row !== null) messages.push(row[row.length - 1] as Uint8Array);
    }
    const history: (readonly [string, Uint8Array])[] = [];
    for (const row of this.#byTable.get('history')?.values() ?? []) {
      if (row !== null) history.push([row[0] as string, row[row.length - 1] as Uint8Array]);
    }
    return { expired: this.#expired, messages, history };
  }

  /** The statements of this batch, to be pipelined inside one transaction. */
  statements(tx: TransactionSql): PendingQuery<Row[]>[] {
    const statements: PendingQuery<Row[]>[] = [];
    if (this.#expired.length > 0) statements.push(...expireStatements(tx, this.#expired));
    for (const part of this.#parts()) {
      const text = part.numbered ? highestSeqOf(part.text(1)) : part.text(1);
      for (const chunk of chunks(part.rows)) {
        statements.push(tx.unsafe(text, part.parameters(chunk), PREPARED));
      }
    }
    return statements;
  }

  /**
   * The whole batch as one statement led by `fence`, or `undefined` when it needs a transaction of
   * several (retention deletes, or a table past {@link MAX_ROWS} rows). Decided before the parts are
   * built, so a batch sent as a transaction builds them once.
   *
   * A write transaction of several statements costs three round trips (`BEGIN`, the statements,
   * `COMMIT`); at low rates each carries a message or two, and the round trips were most of a
   * write's latency and of the PostgreSQL protocol's CPU. One statement commits on its own in one
   * round trip, and is as atomic: every write is a data-modifying `WITH` query, which PostgreSQL
   * runs to completion whether or not the main query reads it, after the main query, which is the
   * fence. So the fence takes the lease row's lock first, as in the transaction, and a fence that
   * raises fails the statement whole. The writes see one snapshot and never the others' rows,
   * which is safe because no two of them touch the same key (see the class comment); retention's
   * conditional deletes are kept out for that reason, since a history put queued after one may
   * name the row it deletes.
   */
  fencedStatement(fence: FenceCall): { text: string; parameters: (string | number)[] } | undefined {
    if (this.#expired.length > 0) return undefined;
    for (const rows of this.#byTable.values()) if (rows.size > MAX_ROWS) return undefined;
    const parts = this.#parts();
    const parameters: (string | number)[] = [...fence.parameters];
    const queries: string[] = [];
    const numbered: string[] = [];
    for (const part of parts) {
      const name = `w${queries.length}`;
      queries.push(`${name} as (${part.text(parameters.length + 1)})`);
      if (part.numbered) numbered.push(`(select max(seq) from ${name})`);
      parameters.push(...part.parameters(part.rows));
    }
    if (queries.length === 0) return { text: fence.text, parameters };
    // The numbers the writes took, read after the fence: the main query's columns are computed in
    // order, and a scalar subquery runs when its column is, so the fence still locks first.
    const seq = numbered.length === 0 ? '' : `, greatest(${numbered.join(', ')})::text as seq`;
    return { text: `with ${queries.join(', ')} ${fence.text}${seq}`, parameters };
  }

  /**
   * One statement's worth of writes per table and kind: deletes by key, then upserts, the tables in
   * one fixed order, so that a batch's one statement has one of a few texts, each prepared once per
   * connection, however its turns' writes were ordered. (Within one commit, no order between
   * tables matters: they hold no reference PostgreSQL checks.)
   */
  #parts(): StatementPart[] {
    const parts: StatementPart[] = [];
    for (const name of TABLE_NAMES) {
      const rows = this.#byTable.get(name);
      if (rows === undefined) continue;
      const table: Table = TABLES[name];
      const deletes: RowValues[] = [];
      const puts: RowValues[] = [];
      for (const [key, row] of rows) {
        if (row === null) deletes.push(splitKey(table, key));
        else puts.push(row);
      }
      if (deletes.length > 0) {
        parts.push({
          rows: deletes,
          numbered: false,
          text: (first) => deleteText(table, first),
          parameters: arraysOf(table.key),
        });
      }
      if (puts.length > 0) {
        const parameters = arraysOf(rowColumns(table));
        parts.push({
          rows: puts,
          numbered: table.numbered !== undefined,
          text: (first) => upsertText(table, first),
          parameters,
        });
      }
    }
    return parts;
  }

  /**
   * Replay the batch on the local copy, in call order, at most {@link REPLAY_TURN_BUDGET_MS} per
   * event turn: a batch gathered while a transaction was in flight can hold tens of thousands of
   * writes, and replaying it in one go held the loop for tens of ms. Reads in between may see part
   * of the batch: all of it committed already (rule 4); the engine waits for the promises, which
   * resolve once the whole batch is on the copy.
   */
  async applyTo(mirror: BrokerStore, workClock: () => number = () => performance.now()): Promise<void> {
    const writes = this.#mirrorWrites;
    let turnStartedAt = workClock();
    for (let index = 0; index < writes.length; index++) {
      void writes[index]?.(mirror);
      if ((index + 1) % REPLAY_CLOCK_EVERY === 0 && index + 1 < writes.length) {
        if (workClock() - turnStartedAt >= REPLAY_TURN_BUDGET_MS) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          turnStartedAt = workClock();
        }
      }
    }
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

/** What a batch writes of the tables a standby follows ({@link WriteBatch.followedWrites}). */
export interface FollowedWrites {
  readonly expired: readonly ExpiredMessage[];
  /** Each message row's packed value (a `StoredMessage`, which names its topic and offset). */
  readonly messages: readonly Uint8Array[];
  /** Each history row: its message's id and its packed value. */
  readonly history: readonly (readonly [messageId: string, value: Uint8Array])[];
}

/** The fence's call as the main query of a batch's one statement: parameters `$1` on. */
export interface FenceCall {
  readonly text: string;
  readonly parameters: readonly number[];
}

/** The writes of one table and kind, as a statement whose parameters start at `$first`. */
interface StatementPart {
  readonly rows: readonly RowValues[];
  /** An upsert of a numbered table: its text returns each row's `seq`. */
  readonly numbered: boolean;
  text(first: number): string;
  parameters(rows: readonly RowValues[]): string[];
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

/** Statement texts by table and first parameter: a batch's one statement numbers its parts' parameters on. */
const upsertTexts = new Map<Table, string[]>();
const deleteTexts = new Map<Table, string[]>();

function cachedText(cache: Map<Table, string[]>, table: Table, first: number, make: () => string): string {
  let texts = cache.get(table);
  if (texts === undefined) {
    texts = [];
    cache.set(table, texts);
  }
  let text = texts[first];
  if (text === undefined) {
    text = make();
    texts[first] = text;
  }
  return text;
}

/** The parameters of a part's rows: one array literal per column. */
function arraysOf(columns: readonly Column[]): (rows: readonly RowValues[]) => string[] {
  return (rows) => columns.map((column, index) => arrayLiteral(column, rows, index));
}

/** A row's columns as written: the key, the extra columns, then the packed value. */
function rowColumns(table: Table): Column[] {
  return [...table.key, ...table.extra, { name: 'value', type: 'bytea' }];
}

/** `$first::type[], $first+1::type[], …`: one array parameter per column. */
function arrayParameters(columns: readonly Column[], first: number): string {
  return columns.map((column, index) => `$${first + index}::${column.type}[]`).join(', ');
}

function upsertText(table: Table, first: number): string {
  return cachedText(upsertTexts, table, first, () => {
    const columns = rowColumns(table);
    const names = columns.map((column) => column.name).join(', ');
    const keyList = table.key.map((column) => column.name).join(', ');
    const updates = [
      ...[...table.extra, { name: 'value' }].map(({ name }) => `${name} = excluded.${name}`),
      // A row written again is numbered again: a standby following the table reads it anew.
      ...(table.numbered === undefined ? [] : [`seq = nextval('${ROW_SEQUENCE}')`]),
    ].join(', ');
    const returning = table.numbered === undefined ? '' : ' returning seq';
    return `insert into ${table.name} (${names}) select * from unnest(${arrayParameters(columns, first)}) on conflict (${keyList}) do update set ${updates}${returning}`;
  });
}

/** A numbered upsert (`... returning seq`) as a statement answering one row: the highest `seq` it wrote. */
function highestSeqOf(upsert: string): string {
  return `with written as (${upsert}) select max(seq)::text as seq from written`;
}

function deleteText(table: Table, first: number): string {
  return cachedText(deleteTexts, table, first, () => {
    const keyList = table.key.map((column) => column.name).join(', ');
    return `delete from ${table.name} where (${keyList}) in (select * from unnest(${arrayParameters(table.key, first)}))`;
  });
}

/** Retention's conditional deletes: the history rows that name the expired message. */
function expireStatements(tx: TransactionSql, expired: readonly ExpiredMessage[]): PendingQuery<Row[]>[] {
  return chunks(expired).map((chunk) => {
    const ids = chunk.map((message) => message.messageId);
    const topics = chunk.map((message) => message.topic);
    const offsets = chunk.map((message) => message.offset);
    return tx`delete from ${tx(TABLES.history.name)} t
       using unnest(${ids}::text[], ${topics}::text[], ${offsets}::bigint[]) as d(message_id, topic, msg_offset)
       where t.message_id = d.message_id and t.topic = d.topic and t.msg_offset = d.msg_offset`;
  });
}
