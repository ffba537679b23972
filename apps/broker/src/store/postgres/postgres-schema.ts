import { createHash } from 'node:crypto';
import { decideLayout, type LayoutRules, LayoutVersionError } from '../layout-version.js';
import type { Sql } from './driver.js';
import { schemaStatements } from './postgres-tables.js';
import { queueSchema } from './queue-schema.js';
import { FENCE_FUNCTION } from './store-lease.js';

/**
 * An arbitrary constant: the advisory lock brokers take while creating tables together (the
 * queues' here, the broker registry's in `broker-registry.ts`).
 */
export const SCHEMA_LOCK = 0x72696330;

/**
 * The layout of a PostgreSQL store, numbered apart from the embedded store's (`layout-version.ts`,
 * whose rules it follows). 1: the first, with a `ricochet_message_ids` table; 2: without it, the
 * id index rebuilt from the messages at load; 3: a message's row holds the embedded store's layout
 * 2 record (`schema/stored-message.ts`), the rows written before read beside them
 * (`message-rows.ts`), so the migration rewrites nothing.
 */
export const POSTGRES_LAYOUT_VERSION = 3;

/** Statements that bring a database of layout `from` to the next one. */
const MIGRATIONS: Record<number, readonly string[]> = {
  1: ['drop table if exists ricochet_message_ids'],
  2: [],
};

/** This broker's rules for a database: layout 3, and layouts 1 and 2 migrated. */
const DATABASE_LAYOUT: LayoutRules = {
  version: POSTGRES_LAYOUT_VERSION,
  migratesFrom: 1,
  subject: 'the database',
};

/**
 * The statements that create a queue's tables and fence function, each idempotent, and their
 * fingerprint: a 48-bit prefix of their SHA-256, which fits `ricochet_meta`'s bigint.
 */
const SCHEMA_DDL: readonly string[] = [...schemaStatements(), FENCE_FUNCTION];
const SCHEMA_FINGERPRINT = Number.parseInt(
  createHash('sha256').update(SCHEMA_DDL.join('\n')).digest('hex').slice(0, 12),
  16,
);

/**
 * Create the tables and the fence function of `queue` (`queue-schema.ts`) when missing, in its
 * schema (created first, for a queue past 0), and check the stored layout version.
 *
 * The statements run only when the queue's `schemaFingerprint` (in `ricochet_meta`) is not this
 * release's: on a queue created or last prepared by a release whose statements differ. Though
 * idempotent, they lock: `alter table … add column if not exists` takes the table's exclusive
 * lock, `create index if not exists` its share lock. A broker opening a queue another broker
 * serves (a spread broker made its standby at any moment) would then queue behind the owner's
 * transactions, and the owner's next writes behind it; behind a paused broker's open read, for as
 * long as the pause. Checking the fingerprint reads one row.
 *
 * The stored layout version:
 * a database written by a newer layout is refused before anything is read or written; an older
 * one is migrated, in the same transaction. A broker of the older layout then refuses the database,
 * so upgrade every broker of a cluster before its standbys take over. Brokers
 * starting at once serialise here on an advisory lock (concurrent `create … if not exists` and
 * `create or replace function` can fail on each other).
 */
export async function preparePostgresSchema(sql: Sql, queue = 0): Promise<void> {
  const schema = queueSchema(queue);
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${SCHEMA_LOCK})`;
    if (schema !== undefined) {
      await tx.unsafe(`create schema if not exists ${schema}`);
      // The session's search_path named the schema before it existed. PostgreSQL resolves the
      // path again once it does, but naming it here keeps what follows in it without relying on that.
      await tx.unsafe(`set local search_path to ${schema}`);
    }
    await tx`create table if not exists ricochet_meta (name text primary key, value bigint not null)`;
    const [row] = await tx<{ value: string }[]>`select value from ricochet_meta where name = 'layoutVersion'`;
    const found = row === undefined ? undefined : Number(row.value);
    const decision = decideLayout(found, DATABASE_LAYOUT);
    if (decision.action === 'refuse') throw new LayoutVersionError(found, decision.reason);
    if (decision.action === 'migrate') {
      for (let version = decision.from; version < POSTGRES_LAYOUT_VERSION; version++) {
        for (const statement of MIGRATIONS[version] ?? []) await tx.unsafe(statement);
      }
      await tx`update ricochet_meta set value = ${POSTGRES_LAYOUT_VERSION} where name = 'layoutVersion'`;
    }
    const [stored] = await tx<{ value: string }[]>`
      select value from ricochet_meta where name = 'schemaFingerprint'`;
    if (decision.action !== 'open' || stored === undefined || Number(stored.value) !== SCHEMA_FINGERPRINT) {
      for (const statement of SCHEMA_DDL) await tx.unsafe(statement);
      await tx`insert into ricochet_meta (name, value) values ('schemaFingerprint', ${SCHEMA_FINGERPRINT})
               on conflict (name) do update set value = excluded.value`;
    }
    if (decision.action === 'initialise') {
      await tx`insert into ricochet_meta (name, value) values ('layoutVersion', ${POSTGRES_LAYOUT_VERSION})`;
    }
  });
}
