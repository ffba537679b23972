import { existsSync } from 'node:fs';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { startPostgres } from './postgres-server.js';
import { startStandby } from './postgres-standby.js';
import { acceptsConnections } from './wait-until-ready.js';

/**
 * initdb, two base backups and three servers on a busy 2-core machine (the whole suite runs beside
 * it), each commit fsynced and, once synchronous, waiting for the standby: a generous bound.
 */
const TEST_TIMEOUT_MS = 180_000;

/** A session of its own on `url`, for one test: `await using` ends it. */
function session(url: string): postgres.Sql & AsyncDisposable {
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  return Object.assign(sql, { [Symbol.asyncDispose]: () => sql.end({ timeout: 5 }) });
}

const dataDirOf = async (sql: postgres.Sql) =>
  String((await sql`select current_setting('data_directory') as dir`)[0]?.dir);

describe('startStandby', () => {
  it(
    'follows its primary synchronously, refuses writes, and once the primary is killed and it is promoted has every commit and takes writes',
    async () => {
      await using primary = await startPostgres();
      await using standby = await startStandby(primary, { synchronous: true });
      // Not synchronous unless asked: the primary waits for the first only.
      await using other = await startStandby(primary, { name: 'other_standby' });
      expect(standby.name).toMatch(/^standby_[0-9a-f]{8}$/);
      expect(standby.port).not.toBe(primary.port);
      expect(standby.url).toBe(`postgres://ricochet@127.0.0.1:${standby.port}/postgres`);

      await using onPrimary = session(primary.url);
      const replication = await onPrimary<{ application_name: string; sync_state: string }[]>`
        select application_name, sync_state from pg_stat_replication order by application_name`;
      expect(replication).toEqual(
        [
          { application_name: standby.name, sync_state: 'sync' },
          { application_name: 'other_standby', sync_state: 'async' },
        ].sort((a, b) => a.application_name.localeCompare(b.application_name)),
      );
      expect((await onPrimary`show synchronous_commit`)[0]?.synchronous_commit).toBe('on');

      const ordersUrl = await primary.createDatabase('orders');
      const standbyOrdersUrl = ordersUrl.replace(`:${primary.port}/`, `:${standby.port}/`);
      {
        await using orders = session(ordersUrl);
        await orders`create table line (id int primary key)`;
        // Each INSERT is a commit the primary answered: synchronous, the standby has flushed it.
        for (let id = 1; id <= 50; id++) await orders`insert into line (id) values (${id})`;
      }
      await using onStandby = session(standbyOrdersUrl);
      expect((await onStandby`select pg_is_in_recovery() as recovering`)[0]?.recovering).toBe(true);
      await expect(onStandby`insert into line (id) values (0)`).rejects.toThrow(/read-only transaction/);
      await expect(standby.createDatabase('refused')).rejects.toThrow(/read-only transaction/);
      const standbyDir = await dataDirOf(onStandby);
      const primaryDir = await dataDirOf(onPrimary);
      expect(standbyDir).not.toBe(primaryDir);

      await primary.kill();
      expect(await acceptsConnections(primary.port)).toBe(false);
      await standby.promote();
      expect((await onStandby`select pg_is_in_recovery() as recovering`)[0]?.recovering).toBe(false);
      expect((await onStandby`select count(*)::int as n from line`)[0]?.n).toBe(50);
      // The promoted standby waits for no standby of its own (the setting came after its copy):
      // were it copied, this commit would never be answered.
      expect((await onStandby`show synchronous_standby_names`)[0]?.synchronous_standby_names).toBe('');
      await onStandby`insert into line (id) values (51)`;
      expect((await onStandby`select count(*)::int as n from line`)[0]?.n).toBe(51);
      await expect(standby.createDatabase('after_promotion')).resolves.toBe(
        `postgres://ricochet@127.0.0.1:${standby.port}/after_promotion`,
      );
      await onStandby.end();

      // Each stopped by its own handle: the killed primary's files go with its stop.
      expect(existsSync(primaryDir)).toBe(true);
      await primary.stop();
      expect(existsSync(primaryDir)).toBe(false);
      await standby.stop();
      expect(await acceptsConnections(standby.port)).toBe(false);
      expect(existsSync(standbyDir)).toBe(false);
      expect(await acceptsConnections(other.port)).toBe(true);
      await other.stop();
      expect(await acceptsConnections(other.port)).toBe(false);
    },
    TEST_TIMEOUT_MS,
  );

  it('refuses a name that is no replication slot’s before copying anything', async () => {
    const primary = { port: 1, url: 'postgres://nobody@127.0.0.1:1/postgres' } as Parameters<
      typeof startStandby
    >[0];
    await expect(startStandby(primary, { name: 'Standby-1' })).rejects.toThrow(/invalid standby name/);
  });
});
