import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildBroker } from '@ricochet/broker';
import type { ConnectionStatus } from '@ricochet/client';
import { Producer } from '@ricochet/producer';
import { ConsumeResult } from '@ricochet/push-consumer';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { AdminApi } from './support/admin.js';
import { startChildBroker } from './support/child-broker.js';
import { startProducer, text } from './support/clients.js';
import { startRecordingConsumer } from './support/push.js';
import { expectInLogOrder, expectNewOffsets } from './support/store-queues.js';
import { postgresDatabase, storedMessages, storeQueues } from './support/test-store.js';
import { outliveOwnerSession } from './support/vanished-host.js';

/**
 * DESIGN.md §9: several brokers on one PostgreSQL store. One owns it through a lease row whose
 * epoch fences every transaction; the others stand by and take over when the owner stops: at
 * once after a clean stop, as soon as the database ends a crashed owner's session (its liveness
 * lock), within the lease TTL otherwise; and a paused ex-owner's writes are refused when it wakes.
 */
const LEASE_MS = 1_000;
const directories: string[] = [];

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ricochet-lease-'));
  directories.push(dir);
  return dir;
}

async function sharedStore(): Promise<string> {
  return postgresDatabase(`lease_${randomBytes(6).toString('hex')}`);
}

afterEach(() => {
  for (const dir of directories.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * Every status change of `producer` from now on, until one `stopAt` accepts or it closes
 * (`watching` then resolves).
 */
function recordStatuses(
  producer: Producer,
  stopAt: (state: ConnectionStatus['state']) => boolean,
): { statuses: ConnectionStatus[]; watching: Promise<void> } {
  const statuses: ConnectionStatus[] = [];
  const watching = (async () => {
    for await (const status of producer.status()) {
      statuses.push(status);
      if (stopAt(status.state) || status.state === 'closed') return;
    }
  })();
  return { statuses, watching };
}

const brokerArgs = (store: string) => [
  '--store',
  store,
  '--no-store-spread',
  '--store-lease-ms',
  String(LEASE_MS),
];

describe('one PostgreSQL store shared by several brokers', () => {
  it('keeps a second broker waiting while the first owns the store, and hands over at once on a clean stop', async () => {
    const store = await sharedStore();
    const settings = {
      store,
      storeQueues: storeQueues(),
      storeSpread: false,
      host: '127.0.0.1',
      port: 0,
      logLevel: 'silent',
      storeLeaseMs: 60_000,
    } as const;
    const first = await buildBroker({ ...settings, dataDir: dataDir() });
    const { url, port } = await first.listen();
    await new AdminApi(`http://127.0.0.1:${port}`).putGroup('g', { startFrom: 'earliest' });
    {
      await using producer = await startProducer(url);
      await producer.send({ topic: 'orders', body: 'before the handover' });
    }
    let secondOpened = false;
    const second = buildBroker({ ...settings, dataDir: dataDir() }).then((broker) => {
      secondOpened = true;
      return broker;
    });
    // The first still owns the store (a 60 s lease, renewed): a round trip to it later, the second still waits.
    await using producer = await startProducer(url);
    await producer.send({ topic: 'orders', body: 'still the first' });
    expect(secondOpened).toBe(false);
    await first.close();
    await using next = await second;
    const { url: nextUrl } = await next.listen();
    await using consumer = await startRecordingConsumer(
      nextUrl,
      { group: 'g', subscriptions: { orders: '*' } },
      () => ConsumeResult.SUCCESS,
    );
    const seen = await consumer.delivered(2);
    expectInLogOrder(
      seen.map((delivery) => text(delivery.message.body)),
      ['before the handover', 'still the first'],
    );
  });

  it('takes over within the lease TTL from a broker whose host vanished, with every acknowledged message', async () => {
    const store = await sharedStore();
    await using owner = await startChildBroker(dataDir(), brokerArgs(store));
    await new AdminApi(owner.endpoint.replace(/^ws/, 'http')).putGroup('g', { startFrom: 'earliest' });
    const sent: string[] = [];
    {
      await using producer = await startProducer(owner.endpoint);
      for (let i = 0; i < 20; i++) {
        await producer.send({ topic: 'orders', body: `m${i}` });
        sent.push(`m${i}`);
      }
    }
    await using standby = await startChildBroker(dataDir(), brokerArgs(store), {
      until: /waiting as a standby/,
    });
    // The database does not see the owner's session end: only the lease's expiry hands over.
    await using lingering = await outliveOwnerSession(store);
    const killedAt = performance.now();
    await owner.kill9();
    await lingering.holding;
    const endpoint = await standby.listening(60_000);
    const takeoverMs = performance.now() - killedAt;
    // The lease was renewed at most a TTL before the kill; the standby polls four times per TTL.
    // A loaded machine adds its start-up work; the bench reports the figure itself.
    expect(takeoverMs).toBeLessThan(LEASE_MS + 15_000);
    await using consumer = await startRecordingConsumer(
      endpoint,
      { group: 'g', subscriptions: { orders: '*' } },
      () => ConsumeResult.SUCCESS,
    );
    const seen = await consumer.delivered(sent.length);
    expect(seen.map((delivery) => text(delivery.message.body)).sort()).toEqual([...sent].sort());
  });

  it('takes over from a broker killed with -9 at once, long before its lease would expire', async () => {
    // A two-minute lease: a standby that waited for it to expire would miss the deadline below.
    const store = await sharedStore();
    const args = ['--store', store, '--no-store-spread', '--store-lease-ms', '120000'];
    await using owner = await startChildBroker(dataDir(), args);
    await new AdminApi(owner.endpoint.replace(/^ws/, 'http')).putGroup('g', { startFrom: 'earliest' });
    {
      await using producer = await startProducer(owner.endpoint);
      await producer.send({ topic: 'orders', body: 'acknowledged before the kill' });
    }
    await using standby = await startChildBroker(dataDir(), args, { until: /waiting as a standby/ });
    const killedAt = performance.now();
    await owner.kill9();
    // The dead process's session ends with it, and its liveness lock: two polls later (250 ms
    // apart) the standby takes the store. A loaded machine adds its start-up work.
    const endpoint = await standby.listening(60_000);
    expect(performance.now() - killedAt).toBeLessThan(60_000);
    await using consumer = await startRecordingConsumer(
      endpoint,
      { group: 'g', subscriptions: { orders: '*' } },
      () => ConsumeResult.SUCCESS,
    );
    const [seen] = await consumer.delivered(1);
    expect(text(seen?.message.body ?? new Uint8Array())).toBe('acknowledged before the kill');
  });

  it('holds a client reconnecting during the takeover and serves it the moment the standby owns the store', async () => {
    // A 3 s lease, waited for in full: the producer's first reconnect attempt (1 s after the drop,
    // by its default backoff) comes well before the standby can own the store.
    const store = await sharedStore();
    const args = ['--store', store, '--no-store-spread', '--store-lease-ms', '3000'];
    await using owner = await startChildBroker(dataDir(), args);
    await using standby = await startChildBroker(dataDir(), args, { until: /waiting as a standby/ });
    await using producer = new Producer({ endpoint: standby.endpoint });
    await producer.start();
    await producer.send({ topic: 'orders', body: 'relayed to the first owner' });
    const { statuses, watching } = recordStatuses(producer, (state) => state === 'connected');
    // A takeover that waits for the lease, so that the producer reconnects in the middle of it.
    await using lingering = await outliveOwnerSession(store);
    await owner.kill9();
    await lingering.holding;
    await standby.listening(60_000);
    await watching;
    // Its first attempt was held, not refused: no second attempt, no grown backoff.
    expect(statuses.map((status) => status.state)).toEqual(['disconnected', 'reconnecting', 'connected']);
    expect(statuses[1]).toMatchObject({ attempt: 1 });
    expect(statuses[2]).toMatchObject({ endpoint: standby.endpoint });
    await producer.send({ topic: 'orders', body: 'stored by the new owner' });
  });

  it('holds an HTTP transport request during the takeover and serves it once the standby owns the store', async () => {
    // Over HTTP each send is a request of its own: the one sent after the kill waits at the
    // standby, unanswered, instead of failing and sending the producer into its reconnect backoff.
    const store = await sharedStore();
    const args = ['--store', store, '--no-store-spread', '--store-lease-ms', '3000'];
    await using owner = await startChildBroker(dataDir(), args);
    await using standby = await startChildBroker(dataDir(), args, { until: /waiting as a standby/ });
    await using producer = new Producer({ endpoint: standby.endpoint.replace(/^ws/, 'http') });
    await producer.start();
    await producer.send({ topic: 'orders', body: 'relayed to the first owner' });
    const { statuses, watching } = recordStatuses(producer, () => false);
    await using lingering = await outliveOwnerSession(store);
    await owner.kill9();
    const sent = producer.send({ topic: 'orders', body: 'stored by the new owner' });
    await lingering.holding;
    await standby.listening(60_000);
    const receipt = await sent;
    await producer.close();
    await watching;
    expect(statuses.map((status) => status.state)).toEqual(['closed']);
    const admin = new AdminApi(standby.endpoint.replace(/^ws/, 'http'));
    // Stored once, after the first message: the held request was forwarded once.
    expect(await admin.getMessage(receipt.messageId)).toMatchObject({ message: { topic: 'orders' } });
    expect((await admin.getTopic('orders')).stats.messages).toBe(2);
    expectNewOffsets([receipt.offset], 1);
  });

  it('refuses the writes of a paused owner once a standby took over, and the paused broker stops', async () => {
    const store = await sharedStore();
    await using owner = await startChildBroker(dataDir(), brokerArgs(store));
    await using producer = await startProducer(owner.endpoint, { maxAttempts: 1 });
    await producer.send({ topic: 'orders', body: 'stored by the first owner' });
    await using standby = await startChildBroker(dataDir(), brokerArgs(store), {
      until: /waiting as a standby/,
    });
    owner.process.kill('SIGSTOP');
    try {
      await standby.listening(60_000);
    } finally {
      owner.process.kill('SIGCONT');
    }
    // Awake again, the old owner still thinks it owns the store until its next transaction: this
    // send's transaction (or the heartbeat before it) hits the fence, and nothing is stored.
    await expect(producer.send({ topic: 'orders', body: 'sent to the deposed owner' })).rejects.toThrow();
    expect(await owner.exited).toBe(1);
    const sql = postgres(store, { max: 1, onnotice: () => {} });
    try {
      expect(await storedMessages(sql)).toBe(1);
    } finally {
      await sql.end({ timeout: 5 });
    }
  });
});
