import { describe, expect, it } from 'vitest';
import postgres from '../../store/postgres/driver.js';
import { postgresForThisFile, storeDatabase } from '../../store/postgres/postgres-server.test-support.js';
import { openBrokerRegistry } from './broker-registry.js';
import { readClusterView } from './cluster-view.js';
import { assignQueues } from './queue-assignment.js';

/** The cluster as the database sees it (`cluster-view.ts`): live brokers, lease holders, assignment. */
const pg = postgresForThisFile();

const LONG_TTL_MS = 60_000;
const A = 'host-a:/var/lib/ricochet';
const B = 'host-b:/var/lib/ricochet';

async function register(url: string, brokerId: string, advertiseUrl: string): Promise<void> {
  const registry = await openBrokerRegistry({
    url,
    brokerId,
    advertiseUrl,
    storeQueues: 4,
    ttlMs: LONG_TTL_MS,
  });
  pg.cleanup(() => registry.close());
}

describe('the cluster view', () => {
  it("names each queue's owner and the queue each broker is assigned, queues no broker opened yet included", async () => {
    const { url, sql, open } = await storeDatabase(pg);
    await register(url, A, 'ws://host-a:7720');
    await register(url, B, 'ws://host-b:7720');
    const zero = await open({ owner: A, leaseTtlMs: LONG_TTL_MS });
    await open({ queue: 1, owner: B, leaseTtlMs: LONG_TTL_MS });

    const view = await readClusterView(sql, 4, 1);
    const assigned = assignQueues(4, [A, B]);
    const assignedTo = (id: string) => assigned.flatMap((owner, queue) => (owner === id ? [queue] : []));
    // With two brokers and one standby each, each stands by for the queues of the other.
    const standbyOf = (queue: number) => (assigned[queue] === A ? B : A);
    expect(view.brokers).toEqual([
      {
        brokerId: A,
        advertiseUrl: 'ws://host-a:7720',
        advertiseTcpUrl: undefined,
        storeQueues: 4,
        expiresInMs: expect.any(Number),
        assignedQueues: assignedTo(A),
        standbyQueues: assignedTo(B),
        ownedQueues: [0],
      },
      {
        brokerId: B,
        advertiseUrl: 'ws://host-b:7720',
        advertiseTcpUrl: undefined,
        storeQueues: 4,
        expiresInMs: expect.any(Number),
        assignedQueues: assignedTo(B),
        standbyQueues: assignedTo(A),
        ownedQueues: [1],
      },
    ]);
    // Queues 2 and 3: no broker opened them, so their schemas do not exist.
    expect(view.queues).toEqual([
      {
        queue: 0,
        owner: A,
        epoch: 1,
        expiresInMs: expect.any(Number),
        assignedTo: assigned[0],
        standbys: [standbyOf(0)],
      },
      {
        queue: 1,
        owner: B,
        epoch: 1,
        expiresInMs: expect.any(Number),
        assignedTo: assigned[1],
        standbys: [standbyOf(1)],
      },
      {
        queue: 2,
        owner: undefined,
        epoch: 0,
        expiresInMs: 0,
        assignedTo: assigned[2],
        standbys: [standbyOf(2)],
      },
      {
        queue: 3,
        owner: undefined,
        epoch: 0,
        expiresInMs: 0,
        assignedTo: assigned[3],
        standbys: [standbyOf(3)],
      },
    ]);
    for (const queue of view.queues.slice(0, 2)) {
      expect(queue.expiresInMs).toBeGreaterThan(LONG_TTL_MS - 5_000);
      expect(queue.expiresInMs).toBeLessThanOrEqual(LONG_TTL_MS);
    }

    // A lease given back (a clean stop) is owned by no one, though its row still names the holder.
    await zero.close();
    const after = await readClusterView(sql, 4, 1);
    expect(after.queues[0]).toEqual({
      queue: 0,
      owner: undefined,
      epoch: 1,
      expiresInMs: 0,
      assignedTo: assigned[0],
      standbys: [standbyOf(0)],
    });
    expect(after.brokers.map((broker) => broker.ownedQueues)).toEqual([[], [1]]);
  });

  it('counts a lease as owned only until it expires', async () => {
    const { sql, open } = await storeDatabase(pg);
    await open({ owner: A, leaseTtlMs: LONG_TTL_MS });
    // As if the owner hung past its lease: the row's expiry in the past, the owner's name still in it.
    await sql`update ricochet_lease set expires_at = clock_timestamp() - interval '1 second'`;
    const view = await readClusterView(sql, 1, 1);
    expect(view.queues).toEqual([
      { queue: 0, owner: undefined, epoch: 1, expiresInMs: 0, assignedTo: undefined, standbys: [] },
    ]);
  });

  it('shows every queue unowned and unassigned in a database no broker has written', async () => {
    const { sql } = await storeDatabase(pg);
    const view = await readClusterView(sql, 2, 1);
    expect(view).toEqual({
      brokers: [],
      queues: [
        { queue: 0, owner: undefined, epoch: 0, expiresInMs: 0, assignedTo: undefined, standbys: [] },
        { queue: 1, owner: undefined, epoch: 0, expiresInMs: 0, assignedTo: undefined, standbys: [] },
      ],
    });
  });

  it('asks which tables exist only until it has seen them all, and again once one is gone', async () => {
    const { url, open } = await storeDatabase(pg);
    await register(url, A, 'ws://host-a:7720');
    await open({ owner: A, leaseTtlMs: LONG_TTL_MS });
    const asked: string[] = [];
    const sql = postgres(url, {
      max: 1,
      onnotice: () => {},
      debug: (_connection, query) => {
        if (query.includes('to_regclass')) asked.push(query);
      },
    });
    pg.cleanup(() => sql.end({ timeout: 5 }));

    // The registry's table and the queue's lease table, each asked about once.
    expect((await readClusterView(sql, 1, 0)).queues[0]?.owner).toBe(A);
    expect(asked).toHaveLength(2);
    expect((await readClusterView(sql, 1, 0)).brokers.map((broker) => broker.brokerId)).toEqual([A]);
    expect(asked).toHaveLength(2);

    // Dropped by hand under running brokers: the read that names it fails, and the next asks again.
    await sql`drop table ricochet_brokers`;
    await expect(readClusterView(sql, 1, 0)).rejects.toMatchObject({ code: '42P01' });
    expect((await readClusterView(sql, 1, 0)).brokers).toEqual([]);
    expect(asked).toHaveLength(4);
  });

  it('refuses a queue count no store has', async () => {
    const { sql } = await storeDatabase(pg);
    for (const count of [0, 65, 1.5])
      await expect(readClusterView(sql, count, 1)).rejects.toThrow(RangeError);
  });
});
