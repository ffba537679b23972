import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeliveredMessage } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startTestBroker } from '../../broker.test-support.js';
import { resolveBrokerConfig } from '../../config.js';
import { openLmdbStore } from '../../store/lmdb-store.js';
import { peerAdminCalls } from '../peers/peer-admin.js';
import { PeerConnection } from '../peers/peer-connection.js';
import { RemoteQueue } from '../peers/remote-queue.js';
import { PartitionRouter, type RemoteQueueParts } from './partition-router.js';
import { idsInQueue } from './queue-ids.test-support.js';

/**
 * Owned-scope push subscriptions (`subscribe.scope: 'owned'`,
 * docs/protocol/README.md#owned-subscriptions) and receives (`receive.scope: 'owned'`,
 * docs/protocol/README.md#owned-receives): a router over two queues, queue 0 its own and queue 1
 * another broker's, reached over a real session between brokers, as in
 * `partition-router-remote.test.ts`.
 */
const PEER_TOKEN = 'peer-token-for-tests';
const QUEUES = 2;

let dir: string;
let owner: Awaited<ReturnType<typeof startTestBroker>>;
let connection: PeerConnection;
let router: PartitionRouter;

const body = new Uint8Array([1]);
/** `count` message ids that go to `queue`. */
const idsIn = (queue: number, count: number, prefix = 'm') => idsInQueue(queue, count, QUEUES, prefix);
const send = (messageIds: readonly string[]) =>
  router.send(messageIds.map((messageId) => ({ messageId, topic: 'orders', body, bornAt: 1 })));

async function ownerGroupStats(): Promise<Record<string, number>> {
  const response = await fetch(`http://127.0.0.1:${owner.address?.port}/v1/groups/billing`);
  return ((await response.json()) as { stats: Record<string, number> }).stats;
}

async function remoteQueue1(): Promise<RemoteQueueParts> {
  const session = await PeerConnection.open({
    url: owner.url,
    token: PEER_TOKEN,
    queue: 0,
    clientId: 'peer:router',
    maxFrameBytes: 8 * 1024 * 1024,
  });
  return {
    messaging: new RemoteQueue(1, session),
    admin: peerAdminCalls(session),
  };
}

/** A push subscription of `billing` through the router, in `scope`, and what it was delivered. */
async function subscribe(scope: 'owned' | undefined, consumerId: string) {
  const delivered: DeliveredMessage[] = [];
  let wake = () => {};
  /** Until `count` deliveries arrived: each delivery wakes it; bounded by the test's timeout. */
  const until = async (count: number) => {
    while (delivered.length < count) await new Promise<void>((resolve) => (wake = resolve));
  };
  const subscriptionId = await router.subscribe({
    group: 'billing',
    subscriptions: { orders: '*' },
    maxCachedMessages: 10,
    consumerId,
    scope,
    sink: (_, messages) => {
      delivered.push(...messages);
      wake();
    },
  });
  return { delivered, until, subscriptionId };
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ricochet-router-owned-'));
  owner = await startTestBroker({}, { peerToken: PEER_TOKEN });
  connection = await PeerConnection.open({
    url: owner.url,
    token: PEER_TOKEN,
    queue: 0,
    clientId: 'peer:router',
    maxFrameBytes: 8 * 1024 * 1024,
  });
  router = new PartitionRouter(
    [
      openLmdbStore({ path: join(dir, 'q0'), flushPolicy: 'commit' }),
      {
        messaging: new RemoteQueue(1, connection),
        admin: peerAdminCalls(connection),
      },
    ],
    { config: resolveBrokerConfig({ dataDir: dir }) },
  );
  router.start();
  await router.putGroup('billing', { startFrom: 'earliest' });
});

afterEach(async () => {
  vi.restoreAllMocks();
  await router.close();
  await connection.close();
  await owner.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('PartitionRouter: owned-scope subscriptions', () => {
  it("delivers from this broker's queues only, subscribing nothing at another queue's owner", async () => {
    const remoteSubscribe = vi.spyOn(RemoteQueue.prototype, 'subscribe');
    const owned = await subscribe('owned', 'worker-owned');
    expect(remoteSubscribe).not.toHaveBeenCalled();
    const own = idsIn(0, 3);
    const remote = idsIn(1, 3);
    await send([...own, ...remote]);
    await owned.until(3);
    expect(owned.delivered.map((message) => message.messageId).sort()).toEqual([...own].sort());
    // Handles and offsets name queue 0, so results find their queue on this broker.
    expect(owned.delivered.every((message) => message.offset % QUEUES === 0)).toBe(true);
    expect(await router.ack(owned.delivered.map((message) => message.receiptHandle))).toEqual([]);
    expect(await ownerGroupStats()).toMatchObject({ inflight: 0, committed: 0 });

    // The other queue's messages were left for its owner: a subscription over every queue takes them.
    const everywhere = await subscribe(undefined, 'worker-everywhere');
    await everywhere.until(3);
    expect(everywhere.delivered.map((message) => message.messageId).sort()).toEqual([...remote].sort());
    expect(owned.delivered).toHaveLength(3);
    expect(await router.ack(everywhere.delivered.map((message) => message.receiptHandle))).toEqual([]);
    expect(await ownerGroupStats()).toMatchObject({ inflight: 0, committed: 3 });
  });

  it('joins a queue that moves to this broker, and leaves one that moves away for its new owner to serve', async () => {
    const owned = await subscribe('owned', 'worker-owned');
    // Queue 1 moves here (a store of its own): the subscription is made in it.
    await router.replaceQueue(1, openLmdbStore({ path: join(dir, 'q1'), flushPolicy: 'commit' }));
    const [movedIn, held] = idsIn(1, 2);
    await send([movedIn as string, held as string]);
    await owned.until(2);
    expect(owned.delivered.map((message) => message.messageId).sort()).toEqual(
      [movedIn, held].sort() as string[],
    );
    expect(owned.delivered.every((message) => message.offset % QUEUES === 1)).toBe(true);
    expect(
      await router.ack([owned.delivered.find((m) => m.messageId === movedIn)?.receiptHandle ?? '']),
    ).toEqual([]);

    // Queue 1 moves away again, to the other broker: the subscription leaves it and is not made
    // at the new owner, whose own owned-scope subscriptions serve it.
    const remoteSubscribe = vi.spyOn(RemoteQueue.prototype, 'subscribe');
    await router.replaceQueue(1, await remoteQueue1());
    expect(remoteSubscribe).not.toHaveBeenCalled();
    const [after] = idsIn(1, 1, 'after');
    await send([after as string]);
    const everywhere = await subscribe(undefined, 'worker-everywhere');
    expect(remoteSubscribe).toHaveBeenCalledTimes(1);
    await everywhere.until(1);
    expect(everywhere.delivered.map((message) => message.messageId)).toEqual([after]);
    // Queue 0 is still this broker's, and still served.
    const [stillOwn] = idsIn(0, 1);
    await send([stillOwn as string]);
    await owned.until(3);
    expect(owned.delivered[2]?.messageId).toBe(stillOwn);
  });
});

describe('PartitionRouter: owned-scope receives', () => {
  /** worker-1's receive of up to 32 from `billing`'s `orders`, leased 10 s, not waiting. */
  const receiveOf = (scope?: 'owned') => ({
    group: 'billing',
    subscriptions: { orders: '*' },
    maxMessages: 32,
    invisibleDurationMs: 10_000,
    awaitDurationMs: 0,
    consumerId: 'worker-1',
    scope,
  });

  it("leases from this broker's queues only, and answers at once with none when it owns none", async () => {
    const own = idsIn(0, 3);
    const remote = idsIn(1, 3);
    await send([...own, ...remote]);
    await router.register('billing', { orders: '*' });
    const owned = await router.receive(receiveOf('owned'));
    expect(owned.map((message) => message.messageId).sort()).toEqual([...own].sort());
    // Its handles name queue 0, so any broker of the cluster settles them.
    expect(owned.every((message) => message.offset % QUEUES === 0)).toBe(true);
    expect(await router.ack(owned.map((message) => message.receiptHandle))).toEqual([]);
    expect(await ownerGroupStats()).toMatchObject({ committed: 0, inflight: 0 });
    // Without the scope, the same router leases the other queue's messages, forwarded.
    const everywhere = await router.receive(receiveOf());
    expect(everywhere.map((message) => message.messageId).sort()).toEqual([...remote].sort());

    // Queue 0 between owners: the router owns no queue, and an owned-scope receive does not wait.
    await router.replaceQueue(0, undefined);
    const startedAt = performance.now();
    expect(await router.receive({ ...receiveOf('owned'), awaitDurationMs: 10_000 })).toEqual([]);
    expect(performance.now() - startedAt).toBeLessThan(5_000);
  });
});
