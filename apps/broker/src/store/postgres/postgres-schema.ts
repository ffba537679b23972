import type { Sql } from 'postgres';
import { decideLayout, LAYOUT_VERSION, LayoutVersionError } from '../layout-version.js';
import { schemaStatements } from './postgres-tables.js';
import { FENCE_FUNCTION } from './store-lease.js';

/** An arbitrary constant: the advisory lock brokers take while creating the schema together. */
const SCHEMA_LOCK = 0x72696330;

/**
 * Create the tables and the fence function when missing, and check the stored layout version:
 * a database written by a newer layout is refused before anything is read or written. Brokers
 * starting at once serialise here on an advisory lock (concurrent `create … if not exists` and
 * `create or replace function` can fail on each other).
 */
export async function preparePostgresSchema(sql: Sql): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${SCHEMA_LOCK})`;
    await tx`create table if not exists ricochet_meta (name text primary key, value bigint not null)`;
    const [row] = await tx<{ value: string }[]>`select value from ricochet_meta where name = 'layoutVersion'`;
    const found = row === undefined ? undefined : Number(row.value);
    const decision = decideLayout(found);
    if (decision.action === 'refuse') throw new LayoutVersionError(found, decision.reason);
    for (const statement of schemaStatements()) await tx.unsafe(statement);
    await tx.unsafe(FENCE_FUNCTION);
    if (decision.action === 'initialise') {
      await tx`insert into ricochet_meta (name, value) values ('layoutVersion', ${LAYOUT_VERSION})`;
    }
  });
}
