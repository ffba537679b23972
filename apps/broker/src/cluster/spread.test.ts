import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeliveredMessage } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { type Broker, buildBroker } from '../app.js';
import type { BrokerConfigInput } from '../config.js';
import { RawClient } from '../gateway/raw-client.test-support.js';
import { brokerIdentity } from '../store/open-store.js';
import { postgresForThisFile } from '../store/postgres/postgres-server.test-support.js';
import { openBrokerRegistry } from './membership/broker-registry.js';
import type { ClusterView } from './membership/cluster-view.js';
import { assignQueues } from './membership/queue-assignment.js';
import type { QueueRoute } from './membership/queue-ownership.js';
import { queueOf } from './routing/queue-addressing.js';

/** Queues spread over brokers on one PostgreSQL database (`--store-spread`, `cluster/membership/queue-ownership.ts`). */
const pg = postgresForThisFile();

const QUEUES = 4;

/** A data directory of its own, so a broker identity of its own; removed after the test. */
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ricochet-spread-'));
  pg.cleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Data directories for two brokers between which rendezvous hashing splits the queues (two random
 * ids give every queue to one of them one time in eight): the test is about splitting them.
 */
function splitPair(): [string, string] {
  const first = dataDir();
  for (let attempt = 0; attempt < 50; attempt++) {
    const second = dataDir();
    const owners = assignQueues(QUEUES, [
      brokerIdentity({ dataDir: first }),
      brokerIdentity({ dataDir: second }),
    ]);
    if (new Set(owners).size === 2) return [first, second];
  }
  throw new Error('no pair of data directories splits the queues');
}

async function startBroker(store: string, dataDir: string): Promise<Broker & { readonly url: string }> {
  const config: BrokerConfigInput = {
    host: '127.0.0.1',
    port: 0,
    logLevel: 'silent',
    dataDir,
    store,
    storeQueues: QUEUES,
    storeSpread: true,
    storeLeaseMs: 1_000,
  };
  const broker = await buildBroker(config);
  pg.cleanup(() => broker.close());
  const { url } = await broker.listen();
  return Object.assign(broker, { url });
}

/** `GET /v1/cluster`, with where the broker asked routes each queue. */
async function clusterOf(
  broker: Pick<Broker, 'address'>,
): Promise<ClusterView & { readonly routes: readonly QueueRoute[] }> {
  const response = await fetch(`http://127.0.0.1:${broker.address?.port}/v1/cluster`);
  return (await response.json()) as ClusterView & { readonly routes: readonly QueueRoute[] };
}

/**
 * Until every queue is held by the broker it is assigned to, among `brokers` live ones, and the
 * broker asked routes each to its owner; at most 20 s.
 */
async function settled(broker: Pick<Broker, 'address'>, brokers: number): Promise<ClusterView> {
  let view = await clusterOf(broker);
  for (let i = 0; i < 400; i++) {
    const spread =
      view.brokers.length === brokers &&
      view.brokers.every((live) => live.advertiseUrl !== undefined) &&
      view.queues.every((queue) => queue.owner !== undefined && queue.owner === queue.assignedTo) &&
      view.routes.every((route) => route.to !== 'nowhere');
    if (spread) return view;
    await new Promise((resolve) => setTimeout(resolve, 50));
    view = await clusterOf(broker);
  }
  throw new Error(`the queues did not settle: ${JSON.stringify(view)}`);
}

/** Send until every message is acknowledged; a queue between owners answers 503, which a producer retries. */
async function sendAll(client: RawClient, messageIds: readonly string[]): Promise<void> {
  let pending = [...messageIds];
  for (let attempt = 0; pending.length > 0 && attempt < 100; attempt++) {
    const answer = await client.request({
      type: 'send',
      messages: pending.map((messageId) => ({
        messageId,
        topic: 'orders',
        body: new Uint8Array([1]),
        bornAt: 1,
      })),
    });
    if (answer.type !== 'sendResult') throw new Error(`expected sendResult, got ${JSON.stringify(answer)}`);
    pending = answer.receipts.flatMap((receipt) => (receipt.ok ? [] : [receipt.messageId]));
    if (pending.length > 0) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  expect(pending).toEqual([]);
}

const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

describe('queues spread over brokers', () => {
  it('splits the queues between two brokers, serves every client through either, and takes a stopped broker’s queues back', async () => {
    const store = await pg.createDatabase('spread');
    const [firstDir, secondDir] = splitPair();
    const first = await startBroker(store, firstDir);
    const alone = await settled(first, 1);
    expect(alone.queues.map((queue) => queue.owner)).toEqual(
      new Array(QUEUES).fill(alone.brokers[0]?.brokerId),
    );

    const second = await startBroker(store, secondDir);
    const shared = await settled(first, 2);
    const owners = new Set(shared.queues.map((queue) => queue.owner));
    expect(owners.size).toBe(2);
    const firstId = alone.brokers[0]?.brokerId;
    expect((await clusterOf(first)).routes.map((route) => route.to)).toEqual(
      shared.queues.map((queue) => (queue.owner === firstId ? 'here' : 'elsewhere')),
    );

    // A producer on the first broker, a consumer on the second: every queue is reached through either.
    const consumer = await RawClient.connect(second.url);
    const subscriptionId = await consumer.subscribe('billing', { orders: '*' }, 64);
    const producer = await RawClient.connect(first.url);
    const messageIds = ids('spread', 40);
    expect(new Set(messageIds.map((id) => queueOf({ messageId: id }, QUEUES))).size).toBe(QUEUES);
    await sendAll(producer, messageIds);
    const delivered: DeliveredMessage[] = [];
    for (let i = 0; i < 100 && delivered.length < messageIds.length; i++) {
      delivered.push(...(await consumer.nextDelivery()).messages);
    }
    expect(delivered.map((message) => message.messageId).sort()).toEqual([...messageIds].sort());
    expect(
      await consumer.request({ type: 'ack', receiptHandles: delivered.map((m) => m.receiptHandle) }),
    ).toMatchObject({
      type: 'settled',
      failures: [],
    });
    consumer.sendFrame({ type: 'credit', subscriptionId, credits: delivered.length });
    const group = (await (
      await fetch(`http://127.0.0.1:${first.address?.port}/v1/groups/billing`)
    ).json()) as {
      stats: Record<string, number>;
    };
    expect(group.stats).toMatchObject({ committed: messageIds.length, inflight: 0 });

    // The second broker stops: the first takes its queues back, and serves them all again.
    await consumer.close();
    await second.close();
    const back = await settled(first, 1);
    expect(new Set(back.queues.map((queue) => queue.owner)).size).toBe(1);
    const again = await RawClient.connect(first.url);
    const againId = await again.subscribe('billing', { orders: '*' }, 64);
    const later = ids('later', 12);
    await sendAll(producer, later);
    const redelivered: DeliveredMessage[] = [];
    for (let i = 0; i < 100 && redelivered.length < later.length; i++) {
      redelivered.push(...(await again.nextDelivery()).messages);
    }
    expect(redelivered.map((message) => message.messageId).sort()).toEqual([...later].sort());
    again.sendFrame({ type: 'credit', subscriptionId: againId, credits: 1 });
    await again.close();
    await producer.close();
    // Two brokers, a database and a handover: seconds on a loaded machine, not the default 5.
  }, 30_000);
});

describe('GET /readyz with queues spread over brokers', () => {
  async function readyz(broker: Pick<Broker, 'address'>) {
    const response = await fetch(`http://127.0.0.1:${broker.address?.port}/readyz`);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it('answers 503 naming the queues without an owner, then 200 once the broker takes them', async () => {
    const store = await pg.createDatabase('readyz');
    const directory = dataDir();
    const me = brokerIdentity({ dataDir: directory });
    // A broker registered in the database that takes none of the queues assigned to it, as one
    // just started does until its first leases: a name rendezvous hashing gives some, not all.
    const silent = Array.from({ length: 64 }, (_, i) => `silent-${i}:/var/lib/ricochet`).find(
      (id) => new Set(assignQueues(QUEUES, [me, id])).size === 2,
    );
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
    // Its listen waits (bounded, 2 leases) for every queue to have an owner, which the silent one's never get.
    const broker = await startBroker(store, directory);
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
