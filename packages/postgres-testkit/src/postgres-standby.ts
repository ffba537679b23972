import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { SUPERUSER } from './init-data-dir.js';
import { type DataDirTarget, launchServer, requireBinaries } from './launch-server.js';
import { type PostgresServer, runningServer } from './postgres-server.js';
import { runToEnd } from './run-to-end.js';

/** A streaming-replication standby of a {@link PostgresServer}: read-only until promoted. */
export interface PostgresStandby extends PostgresServer {
  /** Its name on the primary: `application_name` in `pg_stat_replication`, and its slot's name. */
  readonly name: string;
  /**
   * Promote it (`pg_promote`): it stops following its primary and takes writes, with every
   * transaction the primary had sent it. Resolves once it does.
   *
   * @throws Error when the promotion does not end within 60 s, or the standby is stopped.
   */
  promote(): Promise<void>;
}

/** Options of {@link startStandby}. */
export interface StartStandbyOptions {
  /**
   * Make it the primary's synchronous standby (`synchronous_standby_names` naming it, with
   * `synchronous_commit = on`): from then on the primary answers a COMMIT once the standby has
   * flushed it too, so a promoted standby has every commit a client saw succeed. The primary's
   * commits then wait while the standby is down: stop (or kill) the primary first.
   * @default false (asynchronous)
   */
  readonly synchronous?: boolean;
  /**
   * Its name on the primary; lower-case letters, digits and `_`.
   * @default `standby_` and 8 random hex digits
   */
  readonly name?: string;
  /**
   * Receives every output line of pg_basebackup and the server, prefixed with the program's name.
   * @default no logging
   */
  readonly log?: (line: string) => void;
}

/** The names {@link StartStandbyOptions.name} accepts: a replication slot's. */
const STANDBY_NAME = /^[a-z0-9_]{1,63}$/;

/** How long the primary may take to list a new standby as synchronous; well under a second when idle. */
const SYNCHRONOUS_WITHIN_MS = 30_000;
/** The pause between two looks at `pg_stat_replication`. */
const SYNC_POLL_MS = 50;
/** How long `pg_promote` waits for the promotion, in seconds (its own unit). */
const PROMOTE_WITHIN_S = 60;

/**
 * Start a standby of `primary`: pg_basebackup copies the primary's cluster (through a replication
 * slot of the standby's name, so the primary keeps every WAL segment the standby still needs) into
 * a new temporary directory and writes its `standby.signal` and `primary_conninfo`; the server
 * serves it on a free port of 127.0.0.1 and follows the primary over streaming replication. It is
 * a server of its own: stopping or killing one of the two leaves the other running.
 *
 * @throws Error when pg_basebackup is not installed, the copy or the server fails (quoting their
 *   output), or the primary does not list a synchronous standby as `sync` within 30 s.
 */
export async function startStandby(
  primary: PostgresServer,
  options: StartStandbyOptions = {},
): Promise<PostgresStandby> {
  const name = options.name ?? `standby_${randomBytes(4).toString('hex')}`;
  if (!STANDBY_NAME.test(name)) {
    throw new Error(`invalid standby name ${JSON.stringify(name)}: it must match ${STANDBY_NAME}`);
  }
  const launched = await launchServer(requireBinaries(), options.log, (target) =>
    baseBackup(target, primary.port, name),
  );
  const server = runningServer(launched);
  try {
    // After the copy, not before: the copy would carry the setting, and the standby promoted would
    // wait for a synchronous standby of its own that does not exist.
    if (options.synchronous) await makeSynchronous(primary.url, name);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return {
    ...server,
    name,
    async promote() {
      const sql = postgres(server.url, { max: 1, onnotice: () => {} });
      try {
        const [row] = await sql<
          { promoted: boolean }[]
        >`select pg_promote(true, ${PROMOTE_WITHIN_S}) as promoted`;
        if (row?.promoted !== true)
          throw new Error(`standby ${name} was not promoted within ${PROMOTE_WITHIN_S} s`);
      } finally {
        await sql.end();
      }
    },
  };
}

/**
 * pg_basebackup from the primary on `primaryPort` into `target.dataDir`: `-R` writes the standby's
 * `standby.signal`, its `primary_conninfo` (naming it `application_name`, which
 * `synchronous_standby_names` matches) and its slot; `-C -S` creates that slot first. A fast
 * checkpoint, not a spread one: a spread checkpoint makes the copy wait minutes for nothing.
 * `--no-sync` skips only the copy's final flush, as initdb's (`init-data-dir.ts`).
 */
async function baseBackup(target: DataDirTarget, primaryPort: number, name: string): Promise<void> {
  const pgBasebackup = target.binaries.pgBasebackup;
  if (pgBasebackup === undefined) {
    throw new Error(
      'pg_basebackup is not installed beside initdb and postgres: a standby needs it (`apt-get install -y postgresql`)',
    );
  }
  const connection = `host=127.0.0.1 port=${primaryPort} user=${SUPERUSER} application_name=${name}`;
  const args = [
    ...['-D', target.dataDir, '-d', connection],
    ...['-X', 'stream', '-C', '-S', name, '-R', '--checkpoint=fast', '--no-sync'],
  ];
  await runToEnd(pgBasebackup, args, {
    name: 'pg_basebackup',
    cwd: target.baseDir,
    identity: target.identity,
    log: target.log,
  });
}

/**
 * Name the standby in the primary's `synchronous_standby_names` (with `synchronous_commit = on`,
 * PostgreSQL's default, said here so a changed default cannot weaken the tests), reload, and wait
 * until the primary lists it as `sync`: until then a commit would not wait for it.
 */
async function makeSynchronous(primaryUrl: string, name: string): Promise<void> {
  const sql = postgres(primaryUrl, { max: 1, onnotice: () => {} });
  try {
    // ALTER SYSTEM takes no parameters; the name is checked against STANDBY_NAME above.
    await sql.unsafe(`ALTER SYSTEM SET synchronous_standby_names = 'FIRST 1 ("${name}")'`);
    await sql.unsafe(`ALTER SYSTEM SET synchronous_commit = 'on'`);
    await sql`select pg_reload_conf()`;
    const deadline = Date.now() + SYNCHRONOUS_WITHIN_MS;
    // No event announces it: the walsender re-reads the setting on its next cycle.
    for (;;) {
      const [row] = await sql<{ sync_state: string }[]>`
        select sync_state from pg_stat_replication where application_name = ${name}`;
      if (row?.sync_state === 'sync') return;
      if (Date.now() >= deadline) {
        throw new Error(
          `the primary did not list standby ${name} as synchronous within ${SYNCHRONOUS_WITHIN_MS} ms (sync_state ${row?.sync_state ?? 'none: not connected'})`,
        );
      }
      await sleep(SYNC_POLL_MS);
    }
  } finally {
    await sql.end();
  }
}
