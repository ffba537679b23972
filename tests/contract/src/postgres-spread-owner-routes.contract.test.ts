import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Producer } from '@ricochet/producer';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChildBroker, startChildBroker } from './support/child-broker.js';
import { startProducer } from './support/clients.js';
import { RawSocket } from './support/raw-socket.js';
import {
  forwardedMessages,
  LEASE_MS,
  leastOwning,
  pickRoles,
  QUEUES,
  readCluster,
  startSpreadCluster,
  untilRoutedToLiveOwners,
} from './support/spread-cluster.js';
import { postgresDatabase, storedMessages } from './support/test-store.js';

/**
 * Issue 42 item 1 (DESIGN.md §9): clients that talk to the owners. Three real brokers spread a
 * real PostgreSQL store's queues; a producer given one of them is told the queue map and sends
 * each message straight to its queue's owner, so no broker forwards its sends
 * (`ricochet_cluster_forwarded_messages_total{request="send"}` stays put); when an owner dies, its
 * sends follow the queue to its next owner without one failing (R1/R2), each stored once (R3).
 * A client that does not ask for the map (today's hello) is forwarded for, as before.
 */
const directories: string[] = [];

afterEach(() => {
  for (const dir of directories.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * Send batches of `batch` messages until one is sent with nothing forwarded: the producer routes
 * to an owner once its session there is open, which nothing outside it announces. With four
 * queues, three of them owned elsewhere, a batch of 20 random ids that all land on the entry
 * broker's queues is a (1/4)^20 chance: a batch with nothing forwarded means routes are in use.
 */
async function untilSentStraightToOwners(
  producer: Producer,
  brokers: readonly ChildBroker[],
  batch = 20,
): Promise<number> {
  let sent = 0;
  await expect
    .poll(
      async () => {
        const before = await forwardedMessages(brokers, 'send');
        await Promise.all(
          Array.from({ length: batch }, () => producer.send({ topic: 'orders', body: 'warm' })),
        );
        sent += batch;
        return (await forwardedMessages(brokers, 'send')) - before;
      },
      { timeout: 20_000, interval: 50 },
    )
    .toBe(0);
  return sent;
}

async function expectStoredOnce(store: string, acknowledged: number): Promise<void> {
  const sql = postgres(store, { max: 1, onnotice: () => {} });
  await using _sql = { [Symbol.asyncDispose]: () => sql.end({ timeout: 5 }) };
  expect(await storedMessages(sql)).toBe(acknowledged);
}

describe('§9: a producer sends each message straight to its queue’s owner', () => {
  it('given one broker, it sends 400 messages over the four queues with none forwarded', async () => {
    await using cluster = await startSpreadCluster(directories);
    const { brokers, store } = cluster;
    await untilRoutedToLiveOwners(brokers, 60_000);
    // Not simply the first broker: in about one cluster of 81 it owns all four queues, and a
    // producer given it would forward nothing whether or not it routed to owners.
    const entry = await leastOwning(brokers);
    await using producer = await startProducer(entry.endpoint);
    const warmed = await untilSentStraightToOwners(producer, brokers);
    const before = await forwardedMessages(brokers, 'send');
    const receipts = await Promise.all(
      Array.from({ length: 400 }, (_, n) => producer.send({ topic: 'orders', body: `m${n}` })),
    );
    expect(await forwardedMessages(brokers, 'send')).toBe(before);
    // Every queue took some: offsets name their queue (offset mod 4), so the sends were spread.
    expect(new Set(receipts.map((receipt) => receipt.offset % QUEUES))).toEqual(new Set([0, 1, 2, 3]));
    const view = await readCluster(entry);
    const entryId = view?.brokers.find((broker) => broker.advertiseUrl === entry.endpoint)?.brokerId;
    expect(view?.queues.some((queue) => queue.owner !== entryId)).toBe(true);
    await expectStoredOnce(store, warmed + receipts.length);
  });

  it('over TCP too: the map names each owner’s TCP endpoint, and no send is forwarded', async () => {
    const store = await postgresDatabase(`routes_tcp_${randomBytes(6).toString('hex')}`);
    const flags = ['--store-queues', `${QUEUES}`, '--store-spread', '--store-lease-ms', `${LEASE_MS}`];
    const starts = await Promise.allSettled(
      [0, 1, 2].map(() => {
        const dir = mkdtempSync(join(tmpdir(), 'ricochet-routes-tcp-'));
        directories.push(dir);
        return startChildBroker(dir, ['--store', store, ...flags, '--tcp-port', '0']);
      }),
    );
    const brokers = starts.flatMap((start) => (start.status === 'fulfilled' ? [start.value] : []));
    await using _brokers = {
      [Symbol.asyncDispose]: async () => void (await Promise.all(brokers.map((broker) => broker.kill9()))),
    };
    expect(brokers).toHaveLength(3);
    await untilRoutedToLiveOwners(brokers, 60_000);
    // The broker owning the fewest queues, so that sends through it would be forwarded (above).
    const entry = await leastOwning(brokers);
    const view = await readCluster(entry);
    const tcpEndpoint = view?.brokers.find(
      (broker) => broker.advertiseUrl === entry.endpoint,
    )?.advertiseTcpUrl;
    expect(tcpEndpoint).toMatch(/^tcp:\/\//);
    await using producer = await startProducer(tcpEndpoint as string);
    const warmed = await untilSentStraightToOwners(producer, brokers);
    const before = await forwardedMessages(brokers, 'send');
    const receipts = await Promise.all(
      Array.from({ length: 200 }, (_, n) => producer.send({ topic: 'orders', body: `t${n}` })),
    );
    expect(await forwardedMessages(brokers, 'send')).toBe(before);
    expect(new Set(receipts.map((receipt) => receipt.offset % QUEUES))).toEqual(new Set([0, 1, 2, 3]));
    await expectStoredOnce(store, warmed + receipts.length);
  });

  it('follows a queue whose owner is killed: 0 failed sends, each stored once, then straight to the new owners', async () => {
    await using cluster = await startSpreadCluster(directories);
    const { brokers, store } = cluster;
    await untilRoutedToLiveOwners(brokers, 60_000);
    // The killed broker owns a queue; the producer is given another.
    const { target: killed, producerBroker: entry, consumerBroker: stays } = await pickRoles(brokers);
    await using producer = await startProducer(entry.endpoint);
    const warmed = await untilSentStraightToOwners(producer, brokers);
    let acknowledged = 0;
    const failed: unknown[] = [];
    let stop = false;
    // 16 senders, each awaiting its send before the next, across the kill and the takeover.
    const senders = Array.from({ length: 16 }, async () => {
      while (!stop) {
        try {
          await producer.send({ topic: 'orders', body: 'load' });
          acknowledged++;
        } catch (error) {
          failed.push(error);
        }
      }
    });
    try {
      await expect.poll(() => acknowledged, { timeout: 10_000 }).toBeGreaterThan(200);
      await killed.kill9();
      await untilRoutedToLiveOwners([entry, stays], 30_000);
      const atMove = acknowledged;
      await expect.poll(() => acknowledged, { timeout: 10_000 }).toBeGreaterThan(atMove + 200);
    } finally {
      stop = true;
      await Promise.all(senders);
    }
    expect(failed).toEqual([]);
    // Each acknowledged message once (R3: a send resent after the kill was answered as a duplicate).
    await expectStoredOnce(store, warmed + acknowledged);
    // The producer was told the new owners: its sends go straight to them again.
    await untilSentStraightToOwners(producer, [entry, stays]);
  });
});

describe('§9: clients that do not route are forwarded for, as before', () => {
  it('an older client (today’s hello) is granted nothing, told no map, and its sends succeed through forwarding', async () => {
    await using cluster = await startSpreadCluster(directories);
    const { brokers } = cluster;
    await untilRoutedToLiveOwners(brokers, 60_000);
    const entry = await leastOwning(brokers);
    await using raw = await RawSocket.open(entry.endpoint);
    const messages = Array.from({ length: 20 }, (_, n) => ({
      messageId: `0000000000000000000000000000${String(n).padStart(4, '0')}`,
      topic: 'orders',
      body: new Uint8Array([n]),
      bornAt: Date.now(),
    }));
    const before = await forwardedMessages(brokers, 'send');
    raw.sendFrame({ type: 'send', id: 1, messages });
    // The next frame is the answer: no queueMap frame comes to a session that did not ask.
    const answer = await raw.next();
    expect(answer).toMatchObject({ type: 'sendResult', id: 1 });
    expect(answer.type === 'sendResult' && answer.receipts.every((receipt) => receipt.ok)).toBe(true);
    expect(await forwardedMessages(brokers, 'send')).toBeGreaterThan(before);

    await using older = await startProducer(entry.endpoint, { routeToOwners: false });
    const forwardedBefore = await forwardedMessages(brokers, 'send');
    await Promise.all(Array.from({ length: 40 }, () => older.send({ topic: 'orders', body: 'old' })));
    expect(await forwardedMessages(brokers, 'send')).toBeGreaterThan(forwardedBefore);
  });
});
