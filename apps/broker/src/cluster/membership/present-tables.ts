import type { Sql } from '../../store/postgres/driver.js';

/** Per connection, the tables it has seen exist (names as `to_regclass` takes them). */
const seenPresent = new WeakMap<Sql, Set<string>>();

/** PostgreSQL's `undefined_table`: a statement named a table that does not exist. */
const UNDEFINED_TABLE = '42P01';

/**
 * Which of `tables` exist, asked of the database (`to_regclass`) only while one of them has not
 * been seen yet on `sql`. The cluster view reads the same tables every 250 ms on every broker, and
 * the tables brokers create are never dropped while they run: once all exist, each poll is one
 * query instead of two (an idle three-broker cluster sent about a fifth of its queries to ask).
 * A table dropped by hand after all (a database reset under running brokers) fails the read that
 * names it; {@link readSeenTables} then forgets, and the next call asks again.
 */
export async function presentTables(sql: Sql, tables: readonly string[]): Promise<ReadonlySet<string>> {
  const seen = seenPresent.get(sql);
  if (seen !== undefined && tables.every((table) => seen.has(table))) return new Set(tables);
  // One text parameter, not `sql.array`: on a connection's first query the driver has not read
  // the array types yet and would send the array as a plain string. Table names hold no comma.
  const rows = await sql<{ name: string }[]>`
    select name from unnest(string_to_array(${tables.join(',')}, ',')) as name
     where to_regclass(name) is not null`;
  const present = new Set(rows.map((row) => row.name));
  seenPresent.set(sql, new Set([...(seen ?? []), ...present]));
  return present;
}

/**
 * Run `read`, a query over tables {@link presentTables} said exist; when one no longer does, what
 * `sql` had seen is forgotten before the error goes on, so the next poll asks again.
 */
export async function readSeenTables<T>(sql: Sql, read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === UNDEFINED_TABLE) seenPresent.delete(sql);
    throw error;
  }
}
