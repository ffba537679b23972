import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '@ricochet/core';
import type { DeliveredMessage } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveBrokerConfig } from '../../config.js';
import { ManualTimers } from '../../engine/timers/manual-timers.test-support.js';
import { openLmdbStore } from '../../store/lmdb-store.js';
import { PartitionRouter } from './partition-router.js';
import { queueOf } from './queue-addressing.js';

const QUEUES = 4;
let dir: string;
let clock: ManualClock;
let timers: ManualTimers;
let router: PartitionRouter;

const body = new Uint8Array([1]);
const ids = (count: number, prefix = 'm') => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

async function send(messageIds: readonly string[], messageGroup?: string) {
  return router.send(
    messageIds.map((messageId) => ({
      messageId,
      topic: messageGroup === undefined ? 'orders' : 'fifo-orders',
      body,
      bornAt: clock.now(),
      ...(messageGroup === undefined ? {} : { messageGroup }),
    })),
  );
}

const turns = async (count = 5) => {
  for (let i = 0; i < count; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ricochet-router-'));
  clock = new ManualClock(Date.UTC(2026, 10, 26));
  timers = new ManualTimers(clock);
  const stores = Array.from({ length: QUEUES }, (_, queue) =>
    openLmdbStore({ path: join(dir, `q${queue}`), flushPolicy: 'commit' }),
  );
  router = new PartitionRouter(stores, { config: resolveBrokerConfig({ dataDir: dir }), clock, timers });
  router.start();
  await router.putGroup('billing', { startFrom: 'earliest', retryPolicy: { type: 'fixed', delayMs: 1_000 } });
});

afterEach(async () => {
  await router.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('PartitionRouter', () => {
  it('gives a session between brokers one queue: its own offsets, handles and messages', async () => {
    const target = ids(40).find((id) => queueOf({ messageId: id }, QUEUES) === 2) as string;
    const queue = router.queueService(2);
    if (queue === undefined) throw new Error('queue 2 has no service');
    expect(router.queueService(QUEUES)).toBeUndefined();
    // Sent through the queue itself: stored there, with the queue's own offset.
    const [receipt] = await queue.send([{ messageId: target, topic: 'orders', body, bornAt: clock.now() }]);
    expect(receipt).toMatchObject({ ok: true, offset: 0 });
    const leased = await queue.receive({
      group: 'billing',
      subscriptions: { orders: '*' },
      maxMessages: 5,
      invisibleDurationMs: 10_000,
      awaitDurationMs: 0,
      consumerId: 'peer',
    });
    expect(leased.map((message) => [message.messageId, message.offset])).toEqual([[target, 0]]);
    // The queue's own handle, which the router (and its clients) know by the queue's mark.
    const handle = leased[0]?.receiptHandle ?? '';
    expect(handle.endsWith('@2')).toBe(false);
    expect(await router.ack([`${handle}@2`])).toEqual([]);
    expect(await router.queueService(1)?.describeTopic('orders')).toBeUndefined();
  });

  it('stores each message in the queue of its id, or of its message group, and says so in its offset', async () => {
    const spread = await send(ids(40));
    const queuesUsed = new Set<number>();
    for (const receipt of spread) {
      expect(receipt.ok).toBe(true);
      if (!receipt.ok) continue;
      expect(receipt.offset % QUEUES).toBe(queueOf({ messageId: receipt.messageId }, QUEUES));
      queuesUsed.add(receipt.offset % QUEUES);
    }
    expect(queuesUsed.size).toBe(QUEUES);
    await router.putTopic('fifo-orders', { type: 'fifo' });
    const grouped = await send(ids(10, 'g'), 'customer-7');
    const groupQueues = new Set(grouped.map((receipt) => (receipt.ok ? receipt.offset % QUEUES : -1)));
    expect(groupQueues).toEqual(new Set([queueOf({ messageId: 'x', messageGroup: 'customer-7' }, QUEUES)]));
    // A retried send reaches the queue that holds its id: the original receipt, not a second copy.
    const [again] = await send(['m-3']);
    expect(again).toMatchObject({
      ok: true,
      duplicate: true,
      offset: (spread[3] as { offset: number }).offset,
    });
    expect((await router.describeTopic('orders'))?.stats).toEqual({
      firstOffset: 0,
      nextOffset: 40,
      messages: 40,
    });
  });

  it('never pushes more than the subscription credit over all queues, and spends returned credit anywhere', async () => {
    await send(ids(40));
    const delivered: DeliveredMessage[] = [];
    const subscriptionId = await router.subscribe({
      group: 'billing',
      subscriptions: { orders: '*' },
      maxCachedMessages: 3,
      consumerId: 'test',
      sink: (id, messages) => {
        expect(id).toBe(subscriptionId);
        delivered.push(...messages);
      },
    });
    await turns();
    expect(delivered).toHaveLength(3);
    for (let round = 0; round < 40 && delivered.length < 40; round++) {
      const unsettled = delivered.slice(-3);
      expect(await router.ack(unsettled.map((message) => message.receiptHandle))).toEqual([]);
      router.credit(subscriptionId, unsettled.length);
      await turns();
    }
    expect(new Set(delivered.map((message) => message.messageId))).toEqual(new Set(ids(40)));
    expect((await router.describeGroup('billing'))?.stats).toMatchObject({ committed: 39, inflight: 1 });
  });

  it('leases at most what a receive asks for, from every queue in turn, and waits on all of them', async () => {
    await send(ids(20));
    const request = {
      group: 'billing',
      subscriptions: { orders: '*' },
      invisibleDurationMs: 30_000,
      consumerId: 'simple',
    };
    const first = await router.receive({ ...request, maxMessages: 7, awaitDurationMs: 0 });
    expect(first).toHaveLength(7);
    const rest = await router.receive({ ...request, maxMessages: 32, awaitDurationMs: 0 });
    expect(rest).toHaveLength(13);
    // Nothing Ready: a waiting receive of 2 is answered by the first sends, never with more than 2.
    const waiting = router.receive({ ...request, maxMessages: 2, awaitDurationMs: 10_000 });
    await turns();
    await send(ids(6, 'late'));
    const answered = await waiting;
    expect(answered.length).toBeGreaterThan(0);
    expect(answered.length).toBeLessThanOrEqual(2);
    expect((await router.describeGroup('billing'))?.stats).toMatchObject({ inflight: 20 + answered.length });
  });

  it('settles each handle in the queue it names, and refuses one that names none', async () => {
    await send(ids(8));
    const request = { group: 'billing', subscriptions: { orders: '*' }, invisibleDurationMs: 30_000 };
    const leased = await router.receive({ ...request, consumerId: 'c', maxMessages: 8, awaitDurationMs: 0 });
    const handles = leased.map((message) => message.receiptHandle);
    for (const message of leased) {
      expect(message.receiptHandle).toMatch(/@[0-3]$/);
      // The offset is the topic's, as the send answered: it names the same queue as the handle.
      expect(message.offset % QUEUES).toBe(Number(message.receiptHandle.slice(-1)));
    }
    const untagged = (handles[0] as string).replace(/@\d+$/, '');
    const failures = await router.ack([untagged, ...handles.slice(1), `${handles[1]}0`]);
    expect(failures.map((failure) => [failure.index, failure.error.code])).toEqual([
      [0, 410],
      [8, 410],
    ]);
    expect((await router.describeGroup('billing'))?.stats).toMatchObject({ committed: 7, inflight: 1 });
    const changed = await router.changeInvisibleDuration(handles[0] as string, 60_000);
    expect(changed.receiptHandle).toMatch(/@[0-3]$/);
    expect(await router.ack([changed.receiptHandle])).toEqual([]);
  });

  it('writes topic and group configs to every queue and lists names over all of them', async () => {
    await router.putTopic('payments', { type: 'normal', retentionMs: 60_000 });
    await send(ids(4));
    const page = await router.listTopics(undefined, 1);
    expect(page.items.map((topic) => topic.name)).toEqual(['orders']);
    expect(page.lastName).toBe('orders');
    const next = await router.listTopics('orders', 10);
    expect(next.items.map((topic) => topic.name)).toEqual(['payments']);
    expect(next.items[0]?.config).toMatchObject({ retentionMs: 60_000 });
    expect(next.lastName).toBeNull();
    expect((await router.describeGroup('billing'))?.config.retryPolicy).toEqual({
      type: 'fixed',
      delayMs: 1_000,
    });
  });

  it('pages a DLQ over every queue in offset order', async () => {
    await router.putGroup('billing', { startFrom: 'earliest', maxRetries: 0 });
    await send(ids(12));
    const request = { group: 'billing', subscriptions: { orders: '*' }, invisibleDurationMs: 30_000 };
    const leased = await router.receive({ ...request, consumerId: 'c', maxMessages: 12, awaitDurationMs: 0 });
    expect(
      await router.nack(
        leased.map((message) => ({ receiptHandle: message.receiptHandle, deadLetter: true })),
      ),
    ).toEqual([]);
    await turns();
    const seen: number[] = [];
    let cursor: number | null = 0;
    for (let page = 0; page < 10 && cursor !== null; page++) {
      const answer = await router.listDeadLetters('billing', cursor, 5);
      seen.push(...answer.messages.map((message) => message.offset));
      cursor = answer.cursor;
    }
    expect(seen).toHaveLength(12);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(new Set(seen).size).toBe(12);
  });
});
