import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { postgresForThisFile, storeDatabase } from '../../store/postgres/postgres-server.test-support.js';
import {
  type BrokerRegistry,
  type BrokerRegistryOptions,
  openBrokerRegistry,
  REGISTRY_LOCK,
} from './broker-registry.js';

/** The live brokers of a database (`broker-registry.ts`), on a real PostgreSQL server. */
const pg = postgresForThisFile();

/** Long enough that no row of these tests expires unless a test means it to. */
const LONG_TTL_MS = 60_000;

/** Open a registry, closed after the test (a second close does nothing). */
async function register(
  url: string,
  brokerId: string,
  options: Partial<BrokerRegistryOptions> = {},
): Promise<BrokerRegistry> {
  const registry = await openBrokerRegistry({
    url,
    brokerId,
    storeQueues: 4,
    ttlMs: LONG_TTL_MS,
    ...options,
  });
  pg.cleanup(() => registry.close());
  return registry;
}

const idsOf = (brokers: readonly { readonly brokerId: string }[]) => brokers.map((broker) => broker.brokerId);

describe('the broker registry', () => {
  it('shows two brokers of one database to each other, by id, each with what it advertises', async () => {
    const { url } = await storeDatabase(pg);
    const b = await register(url, 'host-b:/var/lib/ricochet', { advertiseUrl: 'ws://host-b:7720' });
    const a = await register(url, 'host-a:/var/lib/ricochet', {
      advertiseUrl: 'ws://host-a:7720',
      advertiseTcpUrl: 'tcp://host-a:7721',
    });
    const seenByA = await a.live();
    expect(await b.live()).toEqual(seenByA.map((broker) => ({ ...broker, expiresInMs: expect.any(Number) })));
    expect(seenByA).toEqual([
      {
        brokerId: 'host-a:/var/lib/ricochet',
        advertiseUrl: 'ws://host-a:7720',
        advertiseTcpUrl: 'tcp://host-a:7721',
        storeQueues: 4,
        expiresInMs: expect.any(Number),
      },
      {
        brokerId: 'host-b:/var/lib/ricochet',
        advertiseUrl: 'ws://host-b:7720',
        advertiseTcpUrl: undefined,
        storeQueues: 4,
        expiresInMs: expect.any(Number),
      },
    ]);
    for (const broker of seenByA) {
      expect(broker.expiresInMs).toBeGreaterThan(LONG_TTL_MS - 5_000);
      expect(broker.expiresInMs).toBeLessThanOrEqual(LONG_TTL_MS);
    }
  });

  it('removes the row of a broker that closes at once, long before its TTL, and keeps the others', async () => {
    const { url } = await storeDatabase(pg);
    const a = await register(url, 'a');
    const b = await register(url, 'b');
    expect(idsOf(await a.live())).toEqual(['a', 'b']);
    await b.close();
    await b.close();
    expect(idsOf(await a.live())).toEqual(['a']);
  });

  it('forgets a broker whose process died at once, long before its row expires, and sees it again when it comes back', async () => {
    const { url, sql } = await storeDatabase(pg);
    const survivor = await register(url, 'host-a:/var/lib/ricochet');
    const dead = await register(url, 'host-b:/var/lib/ricochet', { ttlMs: 1_000 });
    expect(idsOf(await survivor.live())).toEqual(['host-a:/var/lib/ricochet', 'host-b:/var/lib/ricochet']);
    // Its session ends as a killed process's does: the row stays, the lock goes with the session.
    const [killed] = await sql<{ killed: boolean }[]>`
      select pg_terminate_backend(pid) as killed from pg_locks
       where locktype = 'advisory' and classid = ${REGISTRY_LOCK}::bigint::oid and objsubid = 2
         and objid = (hashtext('host-b:/var/lib/ricochet')::bigint & 4294967295)::oid`;
    expect(killed?.killed).toBe(true);
    const [row] = await sql<{ live: boolean }[]>`
      select expires_at > clock_timestamp() as live from ricochet_brokers where broker_id = 'host-b:/var/lib/ricochet'`;
    expect(row?.live).toBe(true);
    expect(idsOf(await survivor.live())).toEqual(['host-a:/var/lib/ricochet']);
    // Were it only cut off, its next heartbeat reconnects and takes its lock again.
    await vi.waitFor(async () => expect(idsOf(await survivor.live())).toHaveLength(2), {
      timeout: 5_000,
      interval: 50,
    });
    await dead.close();
  });

  it('forgets a broker whose heartbeats stop once its TTL runs out, and sees it again when they resume', async () => {
    const { url, sql } = await storeDatabase(pg);
    const watcher = await register(url, 'watcher');
    const ttlMs = 400;
    await register(url, 'hung', { ttlMs });
    // A heartbeat renews the row every 100 ms: it lives on well past its first TTL.
    await sleep(2 * ttlMs);
    expect(idsOf(await watcher.live())).toEqual(['hung', 'watcher']);
    // Hold the row's lock: the broker's heartbeats wait behind it, as a hung broker's never come.
    await sql.begin(async (tx) => {
      await tx`select 1 from ricochet_brokers where broker_id = 'hung' for update`;
      await vi.waitFor(async () => expect(idsOf(await watcher.live())).toEqual(['watcher']), {
        timeout: 5_000,
        interval: 50,
      });
    });
    // Let go: the waiting heartbeat writes the row back.
    await vi.waitFor(async () => expect(idsOf(await watcher.live())).toEqual(['hung', 'watcher']), {
      timeout: 5_000,
      interval: 50,
    });
  });

  it('reports a failed heartbeat and tries again at the next, never throwing', async () => {
    const { url, sql } = await storeDatabase(pg);
    const errors: unknown[] = [];
    const registry = await register(url, 'a', { ttlMs: 200, onError: (error) => errors.push(error) });
    await sql`alter table ricochet_brokers rename to ricochet_brokers_away`;
    try {
      await vi.waitFor(() => expect(errors.length).toBeGreaterThanOrEqual(2), {
        timeout: 5_000,
        interval: 20,
      });
      expect(String(errors[0])).toMatch(/ricochet_brokers/);
    } finally {
      await sql`alter table ricochet_brokers_away rename to ricochet_brokers`;
    }
    // The row expired meanwhile; the next heartbeat after the table is back writes it again.
    await vi.waitFor(async () => expect(idsOf(await registry.live())).toEqual(['a']), {
      timeout: 5_000,
      interval: 20,
    });
  });

  it('starts a row afresh at registration, keeps its start time at heartbeats, and prunes expired rows', async () => {
    const { url, sql } = await storeDatabase(pg);
    await register(url, 'a', { ttlMs: 40 });
    const startedAt = async () => {
      const [row] = await sql<
        { started_at: Date }[]
      >`select started_at from ricochet_brokers where broker_id = 'a'`;
      return row?.started_at.getTime();
    };
    const firstStart = await startedAt();
    await sleep(100);
    expect(await startedAt()).toBe(firstStart);
    await sql`insert into ricochet_brokers (broker_id, store_queues, started_at, expires_at)
              values ('gone', 4, clock_timestamp() - interval '1 hour', clock_timestamp() - interval '1 minute')`;
    // The same broker restarted while its old process's row lives: the row is taken over, not doubled.
    await register(url, 'a');
    const rows = await sql<
      { broker_id: string }[]
    >`select broker_id from ricochet_brokers order by broker_id`;
    expect(rows.map((row) => row.broker_id)).toEqual(['a']);
    expect(await startedAt()).toBeGreaterThan(firstStart ?? Number.POSITIVE_INFINITY);
  });

  it('creates its table when several brokers start at once', async () => {
    const { url } = await storeDatabase(pg);
    const registries = await Promise.all(['a', 'b', 'c', 'd'].map((id) => register(url, id)));
    expect(idsOf(await (registries[0] as BrokerRegistry).live())).toEqual(['a', 'b', 'c', 'd']);
  });

  it('fails to open, leaving no connection behind, when the database cannot be reached', async () => {
    const { url } = await storeDatabase(pg);
    const unreachable = url.replace(/\/[^/]+$/, '/no_such_database');
    await expect(
      openBrokerRegistry({ url: unreachable, brokerId: 'a', storeQueues: 1, ttlMs: 1_000 }),
    ).rejects.toThrow(/no_such_database/);
  });
});
