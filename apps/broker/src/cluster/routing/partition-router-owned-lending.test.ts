import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeliveredMessage } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveBrokerConfig } from '../../config.js';
import { openLmdbStore } from '../../store/lmdb-store.js';
import { PartitionRouter } from './partition-router.js';
import { idsInQueue } from './queue-ids.test-support.js';

/**
 * An owned-scope subscription whose client lends it credit (`creditLending`,
 * docs/protocol/README.md#credit-lending): a router that owns both of its queues, and a lender
 * that records what the subscription asks for and gives back, as a session sends it to its client.
 */
const QUEUES = 2;

let dir: string;
let router: PartitionRouter;

const body = new Uint8Array([1]);
/** `count` message ids that go to `queue`. */
const idsIn = (queue: number, count: number, prefix = 'm') => idsInQueue(queue, count, QUEUES, prefix);
const send = (messageIds: readonly string[]) =>
  router.send(messageIds.map((messageId) => ({ messageId, topic: 'orders', body, bornAt: 1 })));
/** Let the engines' passes (one per turn) run out. */
const turns = async (count = 10) => {
  for (let i = 0; i < count; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

async function subscribeLent(maxCachedMessages: number) {
  const delivered: DeliveredMessage[] = [];
  const wanted: { subscriptionId: number; ready: number; late: boolean }[] = [];
  const returned: { subscriptionId: number; credits: number }[] = [];
  const subscriptionId = await router.subscribe({
    group: 'billing',
    subscriptions: { orders: '*' },
    maxCachedMessages,
    consumerId: 'worker',
    scope: 'owned',
    sink: (_, messages) => delivered.push(...messages),
    lender: {
      wanted: (id, ready, late) => wanted.push({ subscriptionId: id, ready, late }),
      returned: (id, credits) => returned.push({ subscriptionId: id, credits }),
    },
  });
  return { subscriptionId, delivered, wanted, returned };
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ricochet-router-lending-'));
  router = new PartitionRouter(
    [
      openLmdbStore({ path: join(dir, 'q0'), flushPolicy: 'commit' }),
      openLmdbStore({ path: join(dir, 'q1'), flushPolicy: 'commit' }),
    ],
    { config: resolveBrokerConfig({ dataDir: dir }) },
  );
  router.start();
  await router.putGroup('billing', { startFrom: 'earliest' });
});

afterEach(async () => {
  await router.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('PartitionRouter: an owned-scope subscription on lent credit', () => {
  it('gives its credit back once, under its own id, when no queue has work, and no queue passes it on again', async () => {
    const lent = await subscribeLent(4);
    await turns();
    expect(lent.returned).toEqual([{ subscriptionId: lent.subscriptionId, credits: 4 }]);
    expect(lent.wanted).toEqual([]);
    await turns();
    expect(lent.returned).toHaveLength(1);
  });

  it('asks once for the work of every queue, and again after each loan is spent while messages wait', async () => {
    const lent = await subscribeLent(1);
    await turns();
    expect(lent.returned).toEqual([{ subscriptionId: lent.subscriptionId, credits: 1 }]);
    await send([...idsIn(0, 3), ...idsIn(1, 2)]);
    await turns();
    // Both queues have messages Ready and no credit: one want, not one per queue.
    expect(lent.wanted).toHaveLength(1);
    expect(lent.wanted[0]).toMatchObject({ subscriptionId: lent.subscriptionId, late: false });
    expect(lent.delivered).toHaveLength(0);

    router.credit(lent.subscriptionId, 3);
    await turns();
    expect(lent.delivered).toHaveLength(3);
    // Spent, and two more wait: it asks again.
    expect(lent.wanted).toHaveLength(2);
    router.credit(lent.subscriptionId, 5);
    await turns();
    expect(lent.delivered).toHaveLength(5);
    // Three left over with nothing to deliver: back to the client, once.
    expect(lent.returned).toEqual([
      { subscriptionId: lent.subscriptionId, credits: 1 },
      { subscriptionId: lent.subscriptionId, credits: 3 },
    ]);
    expect(lent.wanted).toHaveLength(2);
  });

  it('opens with no credit when its client has none left to lend, and asks for the messages already waiting', async () => {
    await send([...idsIn(0, 2), ...idsIn(1, 1)]);
    const lent = await subscribeLent(0);
    await turns();
    expect(lent.delivered).toHaveLength(0);
    expect(lent.returned).toEqual([]);
    expect(lent.wanted).toEqual([
      { subscriptionId: lent.subscriptionId, ready: expect.any(Number), late: false },
    ]);
    router.credit(lent.subscriptionId, 3);
    await turns();
    expect(lent.delivered).toHaveLength(3);
  });

  it('asks again for a queue whose want a grant answered, when another queue spent the grant on a retry first (P3)', async () => {
    await send(idsIn(0, 1));
    const lent = await subscribeLent(1);
    await turns();
    expect(lent.delivered).toHaveLength(1);
    // Queue 1 has first deliveries and no credit: a want.
    await send(idsIn(1, 2));
    await turns();
    expect(lent.wanted).toEqual([expect.objectContaining({ late: false })]);
    // Queue 0's message is Ready again: a second want says a retry waits.
    await router.release([lent.delivered[0]?.receiptHandle ?? '']);
    await turns();
    expect(lent.wanted).toHaveLength(2);
    expect(lent.wanted[1]).toMatchObject({ late: true });
    // One credit: queue 0's retry takes it first, and queue 1, its want answered but its messages
    // still waiting, asks again.
    router.credit(lent.subscriptionId, 1);
    await turns();
    expect(lent.delivered.map((message) => message.deliveryAttempt)).toEqual([1, 1]);
    expect(lent.delivered[1]?.messageId).toBe(lent.delivered[0]?.messageId);
    expect(lent.wanted).toHaveLength(3);
    expect(lent.wanted[2]).toMatchObject({ late: false });
  });

  it('is not lent credit without a lender: a client that did not ask for it spends its own', async () => {
    const delivered: DeliveredMessage[] = [];
    await router.subscribe({
      group: 'billing',
      subscriptions: { orders: '*' },
      maxCachedMessages: 10,
      consumerId: 'worker',
      scope: 'owned',
      sink: (_, messages) => delivered.push(...messages),
    });
    await send([...idsIn(0, 2), ...idsIn(1, 2)]);
    await turns();
    expect(delivered).toHaveLength(4);
  });
});
