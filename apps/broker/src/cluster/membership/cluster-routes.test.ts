import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { type Broker, buildBroker } from '../../app.js';
import { startTestBroker } from '../../broker.test-support.js';
import type { BrokerConfigInput } from '../../config.js';
import { brokerIdentity } from '../../store/open-store.js';
import { postgresForThisFile } from '../../store/postgres/postgres-server.test-support.js';
import { registerClusterRoutes } from './cluster-routes.js';
import { assignQueues } from './queue-assignment.js';

/** `GET /v1/cluster` on brokers sharing a PostgreSQL database (`cluster-routes.ts`). */
const pg = postgresForThisFile();

/** A data directory of its own, so a broker of its own name; removed after the test. */
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ricochet-cluster-'));
  pg.cleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A broker on `store`, built but not listening: a standby waits in here until it owns queue 0. */
function building(config: BrokerConfigInput): Promise<Broker> {
  const built = buildBroker({ host: '127.0.0.1', port: 0, logLevel: 'silent', ...config });
  pg.cleanup(async () => {
    const broker = await built.catch(() => undefined);
    await broker?.close();
  });
  return built;
}

async function clusterOf(broker: Pick<Broker, 'address'>): Promise<unknown> {
  const response = await fetch(`http://127.0.0.1:${broker.address?.port}/v1/cluster`);
  expect(response.status).toBe(200);
  return response.json();
}

describe('GET /v1/cluster', () => {
  it('shows the owner and its standby, who owns each queue and who is assigned it, and follows a takeover', async () => {
    const store = await pg.createDatabase('cluster');
    // Active/standby: one broker owns both queues (queues spread are cluster/spread.test.ts's).
    const common = { store, storeQueues: 2, storeSpread: false, storeLeaseMs: 2_000 };
    const [ownerDir, standbyDir] = [dataDir(), dataDir()];
    const [ownerId, standbyId] = [
      brokerIdentity({ dataDir: ownerDir }),
      brokerIdentity({ dataDir: standbyDir }),
    ];
    const owner = await building({ ...common, dataDir: ownerDir, advertiseUrl: 'ws://owner.test:7720' });
    await owner.listen();
    let standbyBuilt = false;
    const standby = building({ ...common, dataDir: standbyDir, advertiseUrl: 'ws://standby.test:7720' }).then(
      (broker) => {
        standbyBuilt = true;
        return broker;
      },
    );

    // The standby is live as soon as it starts, though it waits for the store.
    const both = [ownerId, standbyId].sort();
    const assigned = assignQueues(2, both);
    const assignedTo = (id: string) => assigned.flatMap((broker, queue) => (broker === id ? [queue] : []));
    const brokerEntry = (id: string, ownedQueues: number[]) => ({
      brokerId: id,
      advertiseUrl: id === ownerId ? 'ws://owner.test:7720' : 'ws://standby.test:7720',
      storeQueues: 2,
      expiresInMs: expect.any(Number),
      assignedQueues: assignedTo(id),
      // Active/standby: every broker but the owner stands by for every queue, none for some.
      standbyQueues: [],
      ownedQueues,
    });
    await vi.waitFor(
      async () => expect(((await clusterOf(owner)) as { brokers: unknown[] }).brokers).toHaveLength(2),
      {
        timeout: 5_000,
        interval: 50,
      },
    );
    expect(standbyBuilt).toBe(false);
    // One broker owns every queue today, whatever the assignment says.
    expect(await clusterOf(owner)).toEqual({
      brokers: both.map((id) => brokerEntry(id, id === ownerId ? [0, 1] : [])),
      queues: [0, 1].map((queue) => ({
        queue,
        owner: ownerId,
        epoch: 1,
        expiresInMs: expect.any(Number),
        assignedTo: assigned[queue],
        standbys: [],
      })),
    });

    // The owner stops cleanly: its row goes with it, and the standby takes both queues over.
    await owner.close();
    const successor = await standby;
    await successor.listen();
    const alone = assignQueues(2, [standbyId]);
    expect(alone).toEqual([standbyId, standbyId]);
    expect(await clusterOf(successor)).toEqual({
      brokers: [{ ...brokerEntry(standbyId, [0, 1]), assignedQueues: [0, 1] }],
      queues: [0, 1].map((queue) => ({
        queue,
        owner: standbyId,
        epoch: 2,
        expiresInMs: expect.any(Number),
        assignedTo: standbyId,
        standbys: [],
      })),
    });
  });

  it('is not served by a broker on the embedded store, which has no cluster', async () => {
    await using broker = await startTestBroker();
    const response = await fetch(`http://127.0.0.1:${broker.address?.port}/v1/cluster`);
    expect(response.status).toBe(404);
  });

  it('answers 503 when the database cannot be read', async () => {
    const app = Fastify();
    pg.cleanup(() => app.close());
    registerClusterRoutes(app, { readView: () => Promise.reject(new Error('connection refused')) });
    const response = await app.inject({ method: 'GET', url: '/v1/cluster' });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({
      error: {
        code: 503,
        name: 'BROKER_UNAVAILABLE',
        message: 'could not read the cluster from the database: connection refused',
      },
    });
  });
});
