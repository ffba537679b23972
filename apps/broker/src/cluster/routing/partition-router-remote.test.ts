import type { DeliveredMessage } from '@ricochet/protocol';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { BrokerEngine } from '../../engine/index.js';
import { RemoteQueue } from '../peers/remote-queue.js';
import { CreditLending } from './credit-lending.js';
import { queueOf } from './queue-addressing.js';
import { ids, QUEUES, type RemoteRouter, remoteRouterFixture } from './remote-router.test-support.js';

/**
 * A router over two queues, queue 0 its own and queue 1 another broker's
 * (`remote-router.test-support.ts`): every call of the service reaches both, over a real session
 * between brokers. What happens while queue 1 moves is `partition-router-reroutes.test.ts`.
 */
const remote = remoteRouterFixture();
const { routeQueue1ToOwnerAgain, send } = remote;
let owner: RemoteRouter['owner'];
let router: RemoteRouter['router'];
beforeEach(() => {
  ({ owner, router } = remote.current());
});

/** worker-1's receive of up to `maxMessages` from `billing`'s `orders`, leased 10 s, not waiting. */
const receiveOf = (maxMessages: number) => ({
  group: 'billing',
  subscriptions: { orders: '*' },
  maxMessages,
  invisibleDurationMs: 10_000,
  awaitDurationMs: 0,
  consumerId: 'worker-1',
});

async function ownerGroupStats(): Promise<Record<string, number>> {
  const response = await fetch(`http://127.0.0.1:${owner.address?.port}/v1/groups/billing`);
  return ((await response.json()) as { stats: Record<string, number> }).stats;
}

/** A push subscription of worker-1 to `billing` through the router, and what it was delivered. */
async function subscribe(maxCachedMessages: number) {
  const delivered: DeliveredMessage[] = [];
  let wake = () => {};
  /** Until `count` deliveries arrived: each delivery wakes it; bounded by the test's timeout. */
  const until = async (count: number) => {
    while (delivered.length < count) await new Promise<void>((resolve) => (wake = resolve));
  };
  const subscriptionId = await router.subscribe({
    group: 'billing',
    subscriptions: { orders: '*' },
    maxCachedMessages,
    consumerId: 'worker-1',
    sink: (_, messages) => {
      delivered.push(...messages);
      wake();
    },
  });
  return { delivered, until, subscriptionId };
}

describe('PartitionRouter with a queue another broker owns', () => {
  it('sends to both, leases from both within maxMessages, and settles each handle where it was leased', async () => {
    const messageIds = ids(6);
    const receipts = await send(messageIds);
    expect(receipts.map((receipt) => receipt.ok && receipt.offset % QUEUES)).toEqual(
      messageIds.map((id) => queueOf({ messageId: id }, QUEUES)),
    );
    await router.register('billing', { orders: '*' });
    const receive = receiveOf(4);
    const first = await router.receive(receive);
    const second = await router.receive(receive);
    expect(first).toHaveLength(4);
    expect([...first, ...second].map((message) => message.messageId).sort()).toEqual([...messageIds].sort());
    expect(await router.ack([...first, ...second].map((message) => message.receiptHandle))).toEqual([]);
    expect(await ownerGroupStats()).toMatchObject({ committed: 3, inflight: 0 });
    expect((await router.describeGroup('billing'))?.stats).toMatchObject({ committed: 6, inflight: 0 });
    // Admin calls reach the owner too: the group's config is in both queues, the topic's stats add up.
    expect((await router.describeGroup('billing'))?.config.retryPolicy).toEqual({
      type: 'fixed',
      delayMs: 20,
    });
    expect((await router.describeTopic('orders'))?.stats).toMatchObject({ nextOffset: 6, messages: 6 });
    expect((await router.listTopics(undefined, 10)).items.map((topic) => topic.name)).toEqual(['orders']);
  });

  it('answers a waiting receive with what a send to the other broker brings', async () => {
    await router.register('billing', { orders: '*' });
    const waiting = router.receive({ ...receiveOf(2), awaitDurationMs: 10_000 });
    const remoteId = ids(2)[1] as string;
    await send([remoteId]);
    expect((await waiting).map((message) => message.messageId)).toEqual([remoteId]);
  });

  it('hands back what the other broker leased for a receive another queue answered: Ready again, the attempt not counted', async () => {
    await router.register('billing', { orders: '*' });
    const local = ids(8).find((id) => queueOf({ messageId: id }, QUEUES) === 0) as string;
    const remoteId = ids(8).find((id) => queueOf({ messageId: id }, QUEUES) === 1) as string;
    // Both queues wait for one message: the owner of queue 1 once the router asked it to wait.
    const askedToWait = new Promise<void>((resolve) => {
      const receive = RemoteQueue.prototype.receive;
      vi.spyOn(RemoteQueue.prototype, 'receive').mockImplementation(function (this: RemoteQueue, request) {
        if (request.awaitDurationMs > 0) resolve();
        return receive.call(this, request);
      });
    });
    const waiting = router.receive({ ...receiveOf(1), awaitDurationMs: 10_000 });
    await askedToWait;
    // Queue 0 answers at once; the owner, which cannot be told to stop, leases the other one late.
    await send([local, remoteId]);
    const [kept] = await waiting;
    expect(kept?.messageId).toBe(local);
    // Handed back, it is received next as its first attempt still. A lease made visible with
    // changeInvisibleDuration(0) came back as attempt 2: under a delivery rate limit, receives of a
    // spread store spent one each time, and took a message to the DLQ that nobody had received.
    const [again] = await router.receive({ ...receiveOf(1), awaitDurationMs: 10_000 });
    expect(again).toMatchObject({ messageId: remoteId, deliveryAttempt: 1 });
    expect(await router.ack([kept?.receiptHandle ?? '', again?.receiptHandle ?? ''])).toEqual([]);
    expect(await ownerGroupStats()).toMatchObject({ committed: 1, inflight: 0 });
  });

  it('pushes from both within one credit, and releases what the subscription held when its session ends (C2)', async () => {
    const { delivered, until, subscriptionId } = await subscribe(3);
    const messageIds = ids(10);
    await send(messageIds);
    await until(3);
    // Settle one at a time and grant its credit back, as a consumer does: never more than 3 held.
    for (let settled = 0; settled < 7; settled++) {
      const next = delivered[settled] as DeliveredMessage;
      expect(delivered.length - settled).toBeLessThanOrEqual(3);
      expect(await router.ack([next.receiptHandle])).toEqual([]);
      router.credit(subscriptionId, 1);
      await until(Math.min(10, settled + 4));
    }
    expect(delivered.map((message) => message.messageId).sort()).toEqual([...messageIds].sort());
    const stats = (await router.describeGroup('billing'))?.stats;
    expect(stats).toMatchObject({ committed: 7, inflight: 3 });

    router.endSubscriptions([subscriptionId]);
    for (let i = 0; i < 100 && (await ownerGroupStats()).inflight !== 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect((await router.describeGroup('billing'))?.stats).toMatchObject({ committed: 7, inflight: 0 });
  });

  it('gives credit to a retry Ready again in its own queue before a first delivery the other queue waits to make (P3)', async () => {
    const { delivered, until, subscriptionId } = await subscribe(1);
    const [own, remote] = ids(2) as [string, string];
    await send([own]);
    await until(1);
    expect(await router.nack([{ receiptHandle: delivered[0]?.receiptHandle ?? '' }])).toEqual([]);

    // The owner asks for credit for the remote message; the pool is empty, so it waits.
    const { wanted } = CreditLending.prototype;
    const remoteWaits = new Promise<void>((resolve) =>
      vi.spyOn(CreditLending.prototype, 'wanted').mockImplementation(function (this: CreditLending, ...args) {
        wanted.apply(this, args);
        resolve();
      }),
    );
    await send([remote]);
    await remoteWaits;
    // The retry (20 ms) is Ready again here, behind the same empty pool.
    const ownQueue = router.queueService(0) as BrokerEngine;
    for (let i = 0; i < 200 && !ownQueue.hasReadyAgain('billing'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(ownQueue.hasReadyAgain('billing')).toBe(true);

    router.credit(subscriptionId, 1);
    await until(2);
    expect(delivered[1]).toMatchObject({ messageId: own, deliveryAttempt: 2 });
    expect(await router.ack([delivered[1]?.receiptHandle ?? ''])).toEqual([]);
    router.credit(subscriptionId, 1);
    await until(3);
    expect(delivered[2]).toMatchObject({ messageId: remote, deliveryAttempt: 1 });
    expect(await router.ack([delivered[2]?.receiptHandle ?? ''])).toEqual([]);
  });

  it('throttles a send on the backlog over both queues, wherever it goes (R4)', async () => {
    await router.putTopic('orders', { type: 'normal', maxBacklogMessages: 2 });
    await router.register('billing', { orders: '*' });
    const [inOwn, inRemote] = ids(2) as [string, string];
    // Another message for this broker's own queue, where one message alone is under the limit.
    const third = ids(4)[1] as string;
    expect((await send([inOwn, inRemote])).every((receipt) => receipt.ok)).toBe(true);
    expect(await router.topicBacklog('orders')).toEqual({
      topic: 'orders',
      maxBacklogMessages: 2,
      groups: [{ group: 'billing', backlog: 2 }],
    });
    const [refused] = await send([third]);
    expect(refused).toMatchObject({ ok: false, error: { code: 530 } });
    expect((await router.describeTopic('orders'))?.stats).toMatchObject({ messages: 2 });

    const [leased] = await router.receive(receiveOf(1));
    expect(await router.ack([leased?.receiptHandle ?? ''])).toEqual([]);
    expect((await send([third]))[0]).toMatchObject({ ok: true });
  });

  it("counts the remote queue's bytes in the store's size, which the watermarks compare (--max-store-bytes)", async () => {
    await send(ids(6));
    const ownBytes = router.queueService(0)?.storedBytes() as number;
    const remoteBytes = owner.engine.storedBytes() as number;
    expect(remoteBytes).toBeGreaterThan(0);
    expect(await router.storedBytes()).toBe(ownBytes + remoteBytes);
    const response = await fetch(`http://127.0.0.1:${owner.address?.port}/v1/store`);
    expect(await response.json()).toEqual({ storedBytes: remoteBytes });
  });

  it("redrives both queues' DLQs with one pacer, at the rate in all (D2)", async () => {
    const messageIds = ids(4);
    await send(messageIds);
    await router.register('billing', { orders: '*' });
    const receive = receiveOf(4);
    const leased = await router.receive(receive);
    expect(leased).toHaveLength(4);
    expect(
      await router.nack(
        leased.map((message) => ({ receiptHandle: message.receiptHandle, deadLetter: true })),
      ),
    ).toEqual([]);
    for (let i = 0; i < 200 && (await router.describeGroup('billing'))?.stats.dlq !== 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }

    // 10 per second over both queues: one message every 100 ms, whichever queue it is in. Each
    // owner pacing its own share would redrive one from each queue at once.
    const startedAt = performance.now();
    expect(await router.redrive('billing', { ratePerSecond: 10 })).toEqual({ accepted: 4 });
    const redriven: string[] = [];
    for (let i = 0; i < 100 && redriven.length < 4; i++) {
      const found = await router.receive({ ...receive, awaitDurationMs: 1_000 });
      if (redriven.length === 0) expect(found).toHaveLength(1);
      redriven.push(...found.map((message) => message.messageId));
    }
    expect(performance.now() - startedAt).toBeGreaterThanOrEqual(290);
    expect(redriven.sort()).toEqual([...messageIds].sort());
  });

  it('moves client subscriptions when a queue changes owner: elsewhere, then between owners, then elsewhere again', async () => {
    const { delivered, until, subscriptionId } = await subscribe(10);
    const [, first, second] = ids(6).filter((id) => queueOf({ messageId: id }, QUEUES) === 1);
    await send([first as string]);
    await until(1);

    // The owner went away: queue 1 is between owners. Its unsettled delivery goes with the session.
    await router.replaceQueue(1, undefined);
    expect(await send([second as string])).toEqual([
      { ok: false, messageId: second, error: expect.objectContaining({ code: 503 }) },
    ]);
    expect(await router.ack([delivered[0]?.receiptHandle ?? ''])).toEqual([
      { index: 0, error: expect.objectContaining({ code: 503 }) },
    ]);

    // A new owner: the subscription is made there again, on a loan from the same credit.
    await routeQueue1ToOwnerAgain();
    await send([second as string]);
    // The first comes again (released when the old session ended, C2), and the second.
    await until(3);
    expect(
      delivered
        .slice(1)
        .map((message) => message.messageId)
        .sort(),
    ).toEqual([first, second].sort());
    expect(await router.ack(delivered.slice(1).map((message) => message.receiptHandle))).toEqual([]);
    router.endSubscriptions([subscriptionId]);
    expect(await ownerGroupStats()).toMatchObject({ committed: 2, inflight: 0 });
  });
});
