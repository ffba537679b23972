import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type Broker, buildBroker } from '../app.js';
import { brokerIdentity } from '../store/open-store.js';
import { postgresForThisFile } from '../store/postgres/postgres-server.test-support.js';
import { openBrokerRegistry } from './membership/broker-registry.js';
import { assignQueues } from './membership/queue-assignment.js';

/**
 * `GET /readyz` of a broker whose queues are spread (DESIGN.md §9): 503 while a queue it serves has
 * no owner, 200 once every one has. A second broker registered in the database but taking no
 * queue (as one just started does before its first leases) holds the queues assigned to it
 * ownerless for as long as the test wants.
 */
const pg = postgresForThisFile();

const QUEUES = 4;

async function readyz(broker: Pick<Broker, 'address'>) {
  const response = await fetch(`http://127.0.0.1:${broker.address?.port}/readyz`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('GET /readyz with queues spread over brokers', () => {
  it('answers 503 naming the queues without an owner, then 200 once the broker takes them', async () => {
    const store = await pg.createDatabase('readyz');
    const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-readyz-'));
    pg.cleanup(() => rmSync(dataDir, { recursive: true, force: true }));
    const me = brokerIdentity({ dataDir });
    // A name rendezvous hashing gives at least one queue, and leaves this broker at least one.
    const silent = Array.from({ length: 64 }, (_, i) => `silent-${i}:/var/lib/ricochet`).find((id) => {
      const owners = new Set(assignQueues(QUEUES, [me, id]));
      return owners.size === 2;
    });
    if (silent === undefined) throw new Error('no broker name splits the queues');
    const silentQueues = assignQueues(QUEUES, [me, silent]).flatMap((owner, queue) =>
      owner === silent ? [queue] : [],
    );
    const registry = await openBrokerRegistry({
      url: store,
      brokerId: silent,
      storeQueues: QUEUES,
      ttlMs: 60_000,
    });
    pg.cleanup(() => registry.close());

    const broker = await buildBroker({
      host: '127.0.0.1',
      port: 0,
      logLevel: 'silent',
      dataDir,
      store,
      storeQueues: QUEUES,
      storeSpread: true,
      storeLeaseMs: 1_000,
    });
    pg.cleanup(() => broker.close());
    // Waits (bounded, 2 leases) for every queue to have an owner, which the silent broker's never get.
    await broker.listen();
    expect(await readyz(broker)).toEqual({
      status: 503,
      body: {
        status: 'unowned',
        reason: expect.stringContaining(`${silentQueues.join(', ')} without an owner yet`),
        queuesWithoutOwner: silentQueues,
      },
    });
    // Liveness says nothing of the queues: the broker runs.
    expect((await fetch(`http://127.0.0.1:${broker.address?.port}/healthz`)).status).toBe(200);

    // The silent broker leaves: its queues fall to this one, which then serves every queue.
    await registry.close();
    let answer = await readyz(broker);
    for (let poll = 0; poll < 400 && answer.status !== 200; poll++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      answer = await readyz(broker);
    }
    expect(answer).toEqual({ status: 200, body: { status: 'ready' } });
    expect(broker.queueRoutes()?.every((route) => route.to === 'here')).toBe(true);
  });
});
