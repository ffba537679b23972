import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { TopicRecord } from '../records.js';
import { livenessLockKey } from './liveness-lock.js';
import { openOwnerLookup } from './owner-lookup.js';
import { message, postgresForThisFile, storeDatabase } from './postgres-server.test-support.js';
import { openPostgresStore } from './postgres-store.js';
import { TABLES } from './postgres-tables.js';

/** Queues of one database (`queue-schema.ts`): each a whole store, in a schema of its own past queue 0. */
const pg = postgresForThisFile();

/** Long enough that a queue shared by mistake would keep the second owner waiting. */
const LONG_TTL_MS = 60_000;

/** The liveness lock's key before queues existed, which brokers that know nothing of them take. */
const LEGACY_LIVENESS_LOCK = 0x72696331;

const topic = (name: string): TopicRecord => ({ name, config: { type: 'normal' }, createdAt: 1 });

describe('PostgreSQL store queues', () => {
  it('opens queues 0 and 1 of one database under two owners at once, and keeps their data apart', async () => {
    const { open, sql } = await storeDatabase(pg);
    const waits: string[] = [];
    const onWaitingForLease = (holder: { readonly owner: string }) => waits.push(holder.owner);
    // Were the queues one store, the second open would wait out the first owner's lease, and give up.
    const signal = AbortSignal.timeout(10_000);
    const zero = await open({ owner: 'zero', leaseTtlMs: LONG_TTL_MS, onWaitingForLease, signal });
    const one = await open({ queue: 1, owner: 'one', leaseTtlMs: LONG_TTL_MS, onWaitingForLease, signal });
    expect(waits).toEqual([]);
    await Promise.all([
      zero.putTopic(topic('only-in-zero')),
      zero.appendMessage(message('only-in-zero', 0)),
      one.putTopic(topic('only-in-one')),
      one.appendMessage(message('only-in-one', 0)),
    ]);
    // Each queue's fence renews its own lease: both owners still hold theirs.
    const owners = await sql`select
      (select owner from ricochet_lease) as zero, (select owner from ricochet_q1.ricochet_lease) as one`;
    expect(owners[0]).toEqual({ zero: 'zero', one: 'one' });
    await Promise.all([zero.close(), one.close()]);

    const zeroAgain = await open({ owner: 'zero again' });
    expect(zeroAgain.listTopics().map((record) => record.name)).toEqual(['only-in-zero']);
    expect(zeroAgain.readMessages('only-in-one', 0, 10)).toEqual([]);
    const oneAgain = await open({ queue: 1, owner: 'one again' });
    expect(oneAgain.listTopics().map((record) => record.name)).toEqual(['only-in-one']);
    expect(oneAgain.readMessages('only-in-zero', 0, 10)).toEqual([]);
    expect(oneAgain.readMessages('only-in-one', 0, 10).map((stored) => stored.messageId)).toEqual([
      'm-only-in-one-0',
    ]);
  });

  it("creates queue 1's tables, sequence and fence in schema ricochet_q1, and queue 0's in the default schema", async () => {
    const { open, sql } = await storeDatabase(pg);
    // Queue 1 first: its schema does not exist yet when its connections name it.
    await open({ queue: 1, owner: 'one' });
    await open({ owner: 'zero' });
    const [{ schema: defaultSchema } = { schema: '' }] = await sql<
      { schema: string }[]
    >`select current_schema() as schema`;
    const expected = [
      'ricochet_lease',
      'ricochet_lease_takes',
      'ricochet_meta',
      ...Object.values(TABLES).map((table) => table.name),
    ].sort();
    const tables = await sql<{ schema: string; name: string }[]>`
      select table_schema as schema, table_name as name from information_schema.tables
       where table_name like 'ricochet\\_%'`;
    const tablesIn = (schema: string) =>
      tables
        .filter((table) => table.schema === schema)
        .map((table) => table.name)
        .sort();
    expect(tablesIn('ricochet_q1')).toEqual(expected);
    expect(tablesIn(defaultSchema)).toEqual(expected);
    expect(tables).toHaveLength(2 * expected.length);
    const schemasOf = async (kind: 'S' | 'f', name: string) => {
      const rows =
        kind === 'S'
          ? await sql<{ schema: string }[]>`select n.nspname as schema from pg_class c
              join pg_namespace n on n.oid = c.relnamespace where c.relkind = 'S' and c.relname = ${name}`
          : await sql<{ schema: string }[]>`select n.nspname as schema from pg_proc p
              join pg_namespace n on n.oid = p.pronamespace where p.proname = ${name}`;
      return rows.map((row) => row.schema).sort();
    };
    const both = [defaultSchema, 'ricochet_q1'].sort();
    expect(await schemasOf('S', 'ricochet_row_seq')).toEqual(both);
    expect(await schemasOf('f', 'ricochet_fence')).toEqual(both);
  });

  it('holds a liveness lock of its own for each queue, queue 0 keeping the key of brokers before queues', async () => {
    const { open, sql } = await storeDatabase(pg);
    // `sql` is one session of its own: a lock it takes is refused to the stores, and the reverse.
    const tryLock = async (key: number) => {
      const [row] = await sql<{ taken: boolean }[]>`select pg_try_advisory_lock(${key}) as taken`;
      if (row?.taken) await sql`select pg_advisory_unlock(${key})`;
      return row?.taken;
    };
    expect(livenessLockKey(0)).toBe(LEGACY_LIVENESS_LOCK);
    await open({ owner: 'zero' });
    expect(await tryLock(LEGACY_LIVENESS_LOCK)).toBe(false);
    expect(await tryLock(livenessLockKey(1))).toBe(true);
    await open({ queue: 1, owner: 'one' });
    expect(await tryLock(livenessLockKey(1))).toBe(false);
    expect(await tryLock(livenessLockKey(2))).toBe(true);
  });

  it("finds each queue's owner through its own lease row", async () => {
    const { open, url } = await storeDatabase(pg);
    await open({ owner: 'zero', advertiseUrl: 'ws://zero:8080' });
    await open({ queue: 1, owner: 'one', advertiseUrl: 'ws://one:8080' });
    const lookups = [
      openOwnerLookup(url),
      openOwnerLookup(url, { queue: 1 }),
      openOwnerLookup(url, { queue: 2 }),
    ];
    pg.cleanup(async () => {
      await Promise.all(lookups.map((lookup) => lookup.close()));
    });
    const found = await Promise.all(lookups.map((lookup) => lookup.find()));
    // Queue 2 has no store yet: no owner to relay to.
    expect(found).toEqual(['ws://zero:8080', 'ws://one:8080', undefined]);
  });

  it('refuses a queue that is not an integer from 0 to 63, before touching the database', async () => {
    const { url, sql } = await storeDatabase(pg);
    const dir = mkdtempSync(join(tmpdir(), 'ricochet-pg-queues-'));
    pg.cleanup(() => rmSync(dir, { recursive: true, force: true }));
    for (const queue of [-1, 64, 1.5, Number.NaN]) {
      await expect(
        openPostgresStore({ url, cacheDir: join(dir, 'cache'), owner: 'test', queue }),
      ).rejects.toThrow(/queue is an integer from 0 to 63/);
      expect(() => openOwnerLookup(url, { queue })).toThrow(/queue is an integer from 0 to 63/);
    }
    const schemas = await sql`select nspname from pg_namespace where nspname like 'ricochet%'`;
    expect(schemas).toHaveLength(0);
  });

  it('refuses a URL whose search_path would put a queue past 0 in the default schema', async () => {
    const { url } = await storeDatabase(pg);
    const dir = mkdtempSync(join(tmpdir(), 'ricochet-pg-queues-'));
    pg.cleanup(() => rmSync(dir, { recursive: true, force: true }));
    const withPath = `${url}?search_path=public`;
    await expect(
      openPostgresStore({ url: withPath, cacheDir: join(dir, 'cache'), owner: 'test', queue: 1 }),
    ).rejects.toThrow(/sets search_path/);
  });
});
