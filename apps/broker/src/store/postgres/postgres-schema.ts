import type { Sql } from 'postgres';
import { LayoutVersionError } from '../layout-version.js';
import { schemaStatements } from './postgres-tables.js';
import { FENCE_FUNCTION } from './store-lease.js';

/** An arbitrary constant: the advisory lock brokers take while creating the schema together. */
const SCHEMA_LOCK = 0x72696330;

/**
 * The layout of a PostgreSQL store, numbered apart from the embedded store's (`layout-version.ts`,
 * whose rules it follows). 1: the first, with a `ricochet_message_ids` table; 2: without it, the
 * id index rebuilt from the messages at load.
 */
export const POSTGRES_LAYOUT_VERSION = 2;

/** Statements that bring a database of layout `from` to the next one. */
const MIGRATIONS: Record<number, readonly string[]> = {
  1: ['drop table if exists ricochet_message_ids'],
};

/** What opening a database whose stored layout is `found` must do. */
function decidePostgresLayout(
  found: number | undefined,
): { action: 'initialise' | 'open' } | { action: 'migrate'; steps: readonly string[] } {
  if (found === undefined) return { action: 'initialise' };
  if (found === POSTGRES_LAYOUT_VERSION) return { action: 'open' };
  if (!Number.isSafeInteger(found) || found < 1) {
    throw new LayoutVersionError(
      found,
      `the database's layout version ${found} is not one any broker writes`,
    );
  }
  if (found > POSTGRES_LAYOUT_VERSION) {
    throw new LayoutVersionError(
      found,
      `the database has layout version ${found}, written by a newer broker; this broker reads layout ` +
        `${POSTGRES_LAYOUT_VERSION} and cannot downgrade it: run a broker that reads layout ${found}`,
    );
  }
  const steps: string[] = [];
  for (let version = found; version < POSTGRES_LAYOUT_VERSION; version++)
    steps.push(...(MIGRATIONS[version] ?? []));
  return { action: 'migrate', steps };
}

/**
 * Create the tables and the fence function when missing, and check the stored layout version:
 * a database written by a newer layout is refused before anything is read or written; an older
 * one is migrated, in the same transaction. A broker of the older layout then refuses the database,
 * so upgrade every broker of a cluster before its standbys take over. Brokers
 * starting at once serialise here on an advisory lock (concurrent `create … if not exists` and
 * `create or replace function` can fail on each other).
 */
export async function preparePostgresSchema(sql: Sql): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${SCHEMA_LOCK})`;
    await tx`create table if not exists ricochet_meta (name text primary key, value bigint not null)`;
    const [row] = await tx<{ value: string }[]>`select value from ricochet_meta where name = 'layoutVersion'`;
    const found = row === undefined ? undefined : Number(row.value);
    const decision = decidePostgresLayout(found);
    if (decision.action === 'migrate') {
      for (const statement of decision.steps) await tx.unsafe(statement);
      await tx`update ricochet_meta set value = ${POSTGRES_LAYOUT_VERSION} where name = 'layoutVersion'`;
    }
    for (const statement of schemaStatements()) await tx.unsafe(statement);
    await tx.unsafe(FENCE_FUNCTION);
    if (decision.action === 'initialise') {
      await tx`insert into ricochet_meta (name, value) values ('layoutVersion', ${POSTGRES_LAYOUT_VERSION})`;
    }
  });
}
