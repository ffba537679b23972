/**
 * The PostgreSQL driver: postgres.js 3.4.9, patched (patches/postgres@3.4.9.patch). Unpatched, a
 * write scheduled after its socket closed throws from a `setImmediate` (porsager/postgres#1154,
 * #1208), which no caller can catch and which ends the broker on a database failover; the patch
 * fails those queries with `CONNECTION_CLOSED` instead, which the store handles like any dropped
 * connection. And a socket that closed while a write waited for its `setImmediate` left that timer
 * set: the connection, connected again, never sent its StartupMessage, so the store's next
 * transaction hung until the lease ran out and the store was given up (seen after
 * `pg_terminate_backend`; `driver.test.ts`). The patch drops the waiting write with its timer.
 * And a backend terminated while its connection was still starting (a failover's first seconds,
 * while the driver fetches the array types every new connection asks for first) rejected the
 * driver's own query with nobody to catch it, which ended the broker (porsager/postgres#1192,
 * #1205), and replayed its 57P01 onto the first query of the next connection (#1223); the patch
 * handles that query and forgets the old error.
 *
 * The workspace installs the patched driver, but a team installing `@ricochet/broker` from npm
 * would get plain 3.4.9 from the registry, the newest release, without the fix. So every module
 * of the broker takes the driver from here, and the published build points this one import at the
 * patched copy it ships in `dist/vendor/postgres` (`scripts/vendor-postgres.mjs`); the release
 * check proves the installed broker loads that copy. Drop both once upstream releases the guard.
 */
import postgres from 'postgres';

export default postgres;
export type { PendingQuery, Row, Sql, TransactionSql } from 'postgres';
