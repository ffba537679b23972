import type { DeliveredMessage } from '@ricochet/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { putGroup, startTestBroker } from '../../broker.test-support.js';
import { CreditLending } from '../routing/credit-lending.js';
import { PeerConnection } from './peer-connection.js';
import { RemoteQueue } from './remote-queue.js';

/** Queue 3 of a router here is queue 0 of another broker, its owner, reached over a session between brokers. */
const PEER_TOKEN = 'peer-token-for-tests';
const QUEUE = 3;

const messageId = (n: number) => `4000000000000000000000000000${String(n).padStart(4, '0')}`;
const outgoing = (n: number) => ({
  messageId: messageId(n),
  topic: 'orders',
  body: new Uint8Array([n]),
  bornAt: 1,
});

let owner: Awaited<ReturnType<typeof startTestBroker>>;
let connection: PeerConnection;
let remote: RemoteQueue;

beforeEach(async () => {
  owner = await startTestBroker({}, { peerToken: PEER_TOKEN });
  // Full history: the success's entry is what names the client the settle was made for.
  await putGroup(owner, 'billing', {
    startFrom: 'earliest',
    retryPolicy: { type: 'fixed', delayMs: 10 },
    history: 'full',
  });
  connection = await PeerConnection.open({
    url: owner.url,
    token: PEER_TOKEN,
    queue: 0,
    clientId: 'peer:test',
    maxFrameBytes: 8 * 1024 * 1024,
  });
  remote = new RemoteQueue(QUEUE, connection);
});

afterEach(async () => {
  await connection.close();
  await owner.close();
});

async function groupStats(): Promise<Record<string, number>> {
  const response = await fetch(`http://127.0.0.1:${owner.address?.port}/v1/groups/billing`);
  return ((await response.json()) as { stats: Record<string, number> }).stats;
}

describe('RemoteQueue', () => {
  it('sends, leases within the budget, settles and changes invisibility for a client, in its name', async () => {
    const receipts = await remote.send([outgoing(1), outgoing(2), outgoing(3)]);
    expect(receipts.map((receipt) => receipt.ok && receipt.offset)).toEqual([0, 1, 2]);
    await remote.register('billing', { orders: '*' });
    const budget = { remaining: 2, remainingBytes: Number.POSITIVE_INFINITY };
    const leased = await remote.receive({
      group: 'billing',
      subscriptions: { orders: '*' },
      maxMessages: 32,
      invisibleDurationMs: 10_000,
      awaitDurationMs: 0,
      consumerId: 'worker-9',
      budget,
    });
    expect(leased.map((message) => message.messageId)).toEqual([messageId(1), messageId(2)]);
    expect(budget.remaining).toBe(0);
    // Spent: a receive with nothing left of its budget asks the owner nothing.
    expect(await remote.receive({ ...receiveOf('worker-9'), budget })).toEqual([]);

    const [first, second] = leased as [DeliveredMessage, DeliveredMessage];
    const changed = await remote.changeInvisibleDuration(second.receiptHandle, 20_000);
    expect(changed.messageId).toBe(messageId(2));
    expect(
      await remote.ack([first.receiptHandle, second.receiptHandle, changed.receiptHandle], 'billing-app'),
    ).toEqual([
      // The handle changeInvisibleDuration replaced is dead (S4).
      { index: 1, error: expect.objectContaining({ errorName: 'INVALID_RECEIPT_HANDLE' }) },
    ]);
    const view = (await (
      await fetch(`http://127.0.0.1:${owner.address?.port}/v1/messages/${messageId(1)}`)
    ).json()) as { groups: { history: unknown[] }[] };
    expect(view.groups[0]?.history).toEqual([
      expect.objectContaining({ consumerId: 'worker-9', principal: 'billing-app', result: 'committed' }),
    ]);
  });

  it("subscribes on a loan from the client's credit, borrows more while messages are Ready, and never holds more than the client granted", async () => {
    const pool = { credits: 2 };
    let ownerId = -1;
    const lending = new CreditLending(pool, (queue, credits) => {
      expect(queue).toBe(QUEUE);
      remote.credit(ownerId, credits);
    });
    const delivered: DeliveredMessage[] = [];
    let wake = () => {};
    const until = async (count: number) => {
      while (delivered.length < count) await new Promise<void>((resolve) => (wake = resolve));
    };
    ownerId = await remote.subscribe({
      group: 'billing',
      subscriptions: { orders: '*' },
      maxCachedMessages: 2,
      consumerId: 'worker-1',
      lending,
      sink: (_, messages) => {
        delivered.push(...messages);
        wake();
      },
    });
    // Lent whole, or given back at once while nothing is Ready: never more than the client's 2.
    expect(lending.lentTo(QUEUE) + pool.credits).toBe(2);
    await remote.send([1, 2, 3, 4, 5].map(outgoing));
    await until(2);
    // The client holds its credit's worth; the rest waits for credit.
    expect(lending.lentTo(QUEUE) + pool.credits).toBe(0);
    // The client acks one and grants credit for it, the way a consumer does.
    await remote.ack([delivered[0]?.receiptHandle ?? '']);
    pool.credits += 1;
    lending.serveWaiting();
    await until(3);
    expect(delivered.map((message) => message.messageId)).toEqual([messageId(1), messageId(2), messageId(3)]);
    expect(await groupStats()).toMatchObject({ inflight: 2 });

    // The client unsubscribes, then its session ends: the subscription ends on the owner, and what
    // it held (still leased after the unsubscribe) is released (C2).
    await remote.unsubscribe(ownerId);
    expect(await groupStats()).toMatchObject({ inflight: 2 });
    await remote.end(ownerId);
    expect(await groupStats()).toMatchObject({ inflight: 0 });
  });

  it('fails with 503 once the session to the owner is gone', async () => {
    await connection.close();
    expect(remote.open).toBe(false);
    await expect(remote.send([outgoing(1)])).rejects.toMatchObject({ code: 503 });
  });
});

function receiveOf(consumerId: string) {
  return {
    group: 'billing',
    subscriptions: { orders: '*' },
    maxMessages: 32,
    invisibleDurationMs: 10_000,
    awaitDurationMs: 0,
    consumerId,
  };
}
