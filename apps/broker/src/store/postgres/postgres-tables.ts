/**
 * The PostgreSQL layout: one table per kind of record, keyed like the LMDB databases (see
 * `lmdb-store.ts`), each value in a `bytea` column holding the same stored shape as the embedded
 * store, packed with plain MessagePack (no shared structures, so any broker reads any row); a
 * message's row holds its layout 2 record as it is (`message-rows.ts`). Only the key columns are
 * SQL columns: the broker reads the tables at open and never queries inside a value.
 *
 * The message-id index is the one LMDB database with no table here: every message row holds its
 * id, so the local copy's index is rebuilt from the messages at load (`id-index-rebuild.ts`), and
 * a send writes one row, not two.
 *
 * Every name carries the `ricochet_` prefix, so the tables can live in a database shared with
 * other applications.
 */

/** A key or value column of a table, with its SQL type. */
export interface Column {
  readonly name: string;
  readonly type: 'text' | 'bigint' | 'bytea';
}

/** One row as written: the key columns, the extra columns, then the packed value. */
export type RowValues = readonly (string | number | Uint8Array)[];

/** A table of records: key columns first, then any column written beside the value. */
export interface Table {
  readonly name: string;
  readonly key: readonly Column[];
  /** Columns besides the key that a conditional delete needs (history: its topic and offset). */
  readonly extra: readonly Column[];
  /**
   * Which of this table's writes take a number from {@link ROW_SEQUENCE} in its `seq` column, for
   * a standby to read only the rows written since it last looked (`warm-copy.ts`): `every` insert
   * and rewrite, or only `rewrites` (rows written again under their key). See
   * {@link numberingStatements}.
   */
  readonly numbered?: 'every' | 'rewrites';
}

/** The sequence that numbers the writes of the tables a standby follows. */
export const ROW_SEQUENCE = 'ricochet_row_seq';

const text = (name: string): Column => ({ name, type: 'text' });
const bigint = (name: string): Column => ({ name, type: 'bigint' });

export const TABLES = {
  topics: { name: 'ricochet_topics', key: [text('name')], extra: [] },
  groups: { name: 'ricochet_groups', key: [text('name')], extra: [] },
  cursors: { name: 'ricochet_cursors', key: [text('grp'), text('topic')], extra: [] },
  counters: { name: 'ricochet_counters', key: [text('grp')], extra: [] },
  broadcastInstances: {
    name: 'ricochet_broadcast_instances',
    key: [text('grp'), text('client_id')],
    extra: [],
  },
  // Appended at each topic's next offset (a standby follows them by offset); a DLQ copy is
  // rewritten when redriven.
  messages: {
    name: 'ricochet_messages',
    key: [text('topic'), bigint('msg_offset')],
    extra: [],
    numbered: 'rewrites',
  },
  deliveries: {
    name: 'ricochet_deliveries',
    key: [text('grp'), text('topic'), bigint('msg_offset')],
    extra: [],
  },
  schedule: {
    name: 'ricochet_schedule',
    key: [text('grp'), bigint('due_at'), text('topic'), bigint('msg_offset')],
    extra: [],
  },
  history: {
    name: 'ricochet_history',
    // A broadcasting group's entries are per instance (its clientId); '' for every other group.
    key: [text('message_id'), text('grp'), text('instance'), bigint('lease')],
    extra: [text('topic'), bigint('msg_offset')],
    numbered: 'every',
  },
} as const satisfies Record<string, Table>;

export type TableName = keyof typeof TABLES;

/** Every table in the order the broker loads them at open (metadata before what refers to it). */
export const TABLE_NAMES = Object.keys(TABLES) as TableName[];

/**
 * The tables, created when missing (`ricochet_meta`, which holds the layout version, is created
 * first, by `postgres-schema.ts`). `ricochet_lease` holds the one row that says which broker owns the store and at which epoch, and
 * `ricochet_lease_takes` every epoch's owner (see `store-lease.ts`).
 */
export function schemaStatements(): string[] {
  const statements = [
    `create table if not exists ricochet_lease (
       id smallint primary key check (id = 1),
       owner text not null,
       epoch bigint not null,
       expires_at timestamptz not null
     )`,
    // Added after the first release of the table: where the owner serves clients.
    `alter table ricochet_lease add column if not exists advertise_url text not null default ''`,
    `alter table ricochet_lease add column if not exists advertise_tcp_url text not null default ''`,
    // Added later still: the epoch whose owner holds the liveness lock (see `liveness-lock.ts`).
    `alter table ricochet_lease add column if not exists live_epoch bigint not null default 0`,
    // Every take of the lease, one row per epoch (`store-lease.ts`): the fence records an operator
    // (and the partition tests) read to see that no epoch ever had two owners. The primary key
    // makes a second owner of one epoch impossible rather than merely visible. A take is rare
    // (a start, a failover, a handover), so the table stays small.
    `create table if not exists ricochet_lease_takes (
       epoch bigint primary key,
       owner text not null,
       taken_at timestamptz not null default clock_timestamp()
     )`,
  ];
  for (const table of Object.values(TABLES) as Table[]) {
    const columns = [...table.key, ...table.extra, { name: 'value', type: 'bytea' } as Column];
    const keyNames = table.key.map((column) => column.name).join(', ');
    statements.push(
      `create table if not exists ${table.name} (${columns
        .map((column) => `${column.name} ${column.type} not null`)
        .join(', ')}, primary key (${keyNames}))`,
    );
  }
  // Retention deletes a message's history by id, topic and offset: the key's prefix serves it.
  statements.push(...numberingStatements());
  return statements;
}

/**
 * The `seq` columns of the tables a standby follows (`warm-copy.ts`). A row written again under
 * its key takes a new number in the upsert's update (`write-batch.ts`): a history row (a delivery
 * whose lease a crash lost is granted again with the same lease number) or a message (a DLQ copy
 * marked redriven). A history insert takes one by default too, since history rows arrive for old
 * messages in no order a standby could follow otherwise; a message insert does not, so a send
 * pays nothing for it (the index is partial), and a standby follows new messages by offset. One
 * transaction commits at a time, so a later commit's rows always number higher.
 *
 * Added in steps that rewrite no table: rows written before keep a null `seq` (a standby's first
 * load reads the tables whole anyway).
 */
function numberingStatements(): string[] {
  const statements = [`create sequence if not exists ${ROW_SEQUENCE}`];
  for (const table of Object.values(TABLES) as Table[]) {
    if (table.numbered === undefined) continue;
    statements.push(`alter table ${table.name} add column if not exists seq bigint`);
    if (table.numbered === 'every') {
      statements.push(
        `alter table ${table.name} alter column seq set default nextval('${ROW_SEQUENCE}')`,
        `create index if not exists ${table.name}_by_seq on ${table.name} (seq)`,
      );
    } else {
      statements.push(
        `create index if not exists ${table.name}_rewritten on ${table.name} (seq) where seq is not null`,
      );
    }
  }
  return statements;
}
