import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConsumeResult } from '@ricochet/push-consumer';
import { afterEach, describe, expect, it } from 'vitest';
import { AdminApi } from './support/admin.js';
import { type ChildBroker, startChildBroker } from './support/child-broker.js';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { startRecordingConsumer } from './support/push.js';
import { postgresDatabase } from './support/test-store.js';

/**
 * DESIGN.md §9 with three brokers on one PostgreSQL store: the owner serves, the two standbys
 * relay their clients to it, so the producer and the consumers may each use a different broker;
 * when the owner is killed under load, a standby takes over and the rules go on holding.
 */
const LEASE_MS = 1_000;
const directories: string[] = [];

afterEach(() => {
  for (const dir of directories.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** An owner and two standbys on one fresh database, each a real `ricochet-broker` process. */
async function startCluster(): Promise<{ owner: ChildBroker; standbys: [ChildBroker, ChildBroker] }> {
  const store = await postgresDatabase(`cluster_${randomBytes(6).toString('hex')}`);
  const start = (options: { until?: RegExp } = {}, extraArgs: readonly string[] = []) => {
    const dir = mkdtempSync(join(tmpdir(), 'ricochet-cluster-'));
    directories.push(dir);
    // Active/standby: one owner of every queue (queues spread are postgres-spread-failover's).
    return startChildBroker(
      dir,
      ['--store', store, '--no-store-spread', '--store-lease-ms', String(LEASE_MS), ...extraArgs],
      options,
    );
  };
  const owner = await start();
  // Each standby's copy follows the owner's feed (issue 42, item 2): the owner's commits, as they
  // commit, rather than reads of the database.
  // (An info line: the brokers of these tests log warnings only, unless told.)
  const following = { until: /the local copy follows the owner's feed/ };
  const standbys: [ChildBroker, ChildBroker] = [
    await start(following, ['--log-level', 'info']),
    await start(following, ['--log-level', 'info']),
  ];
  return { owner, standbys };
}

describe('three brokers on one PostgreSQL store', () => {
  it('serves a producer on one standby and consumers on the other through the owner, rules intact', async () => {
    const { owner, standbys } = await startCluster();
    await using _owner = owner;
    await using _first = standbys[0];
    await using _second = standbys[1];
    const [producerBroker, consumerBroker] = standbys;
    await new AdminApi(owner.endpoint.replace(/^ws/, 'http')).putGroup('billing', {
      startFrom: 'earliest',
      retryPolicy: { type: 'stepped', delaysMs: [100] },
      maxRetries: 1,
    });
    await using producer = await startProducer(producerBroker.endpoint);
    // P1/P3/P4 through a relay: fail every delivery; one retry after 100 ms, then the DLQ.
    await using failing = await startRecordingConsumer(
      consumerBroker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      () => ConsumeResult.FAILURE,
    );
    const receipt = await producer.send({ topic: 'orders', body: 'through two relays' });
    const deliveries = await failing.delivered(2);
    expect(deliveries.map((d) => [text(d.message.body), d.message.deliveryAttempt])).toEqual([
      ['through two relays', 1],
      ['through two relays', 2],
    ]);
    expect(deliveries[1]?.message.messageId).toBe(receipt.messageId);
    // D1: the dead-lettered copy, read by a simple consumer on the other standby (S1 through a relay).
    await new AdminApi(owner.endpoint.replace(/^ws/, 'http')).putGroup('dlq-reader', {
      startFrom: 'earliest',
    });
    await using dlq = await startSimpleConsumer(producerBroker.endpoint, {
      group: 'dlq-reader',
      subscriptions: { '%DLQ%billing': '*' },
    });
    const [dead] = await dlq.receive(1, 10_000);
    expect(dead && text(dead.body)).toBe('through two relays');
    if (dead) await dlq.ack(dead);
    // The standbys follow the owner's feed (issue 42, item 2), which is for brokers only: a
    // request without the cluster's peer token is refused, and told why.
    const feed = `${owner.endpoint.replace(/^ws/, 'http')}/v1/store/feed`;
    for (const headers of [
      {},
      { 'ricochet-queue': '0' },
      { 'ricochet-queue': '0', authorization: 'Bearer guess' },
    ]) {
      const answer = await fetch(feed, { headers });
      expect(answer.status).toBe(401);
      expect(await answer.json()).toMatchObject({
        error: { name: 'UNAUTHORIZED', message: expect.stringContaining('peer token') },
      });
    }
  });

  it('keeps every acknowledged message and its retries when the owner is killed under load', async () => {
    const { owner, standbys } = await startCluster();
    await using _first = standbys[0];
    await using _second = standbys[1];
    const endpoints = standbys.map((broker) => broker.endpoint);
    await new AdminApi(owner.endpoint.replace(/^ws/, 'http')).putGroup('billing', {
      startFrom: 'earliest',
      retryPolicy: { type: 'stepped', delaysMs: [200] },
    });
    // Every message fails once and is retried 200 ms later: some retries are pending at the kill.
    const succeeded = new Set<string>();
    let onSuccess = () => {};
    await using consumer = await startRecordingConsumer(
      endpoints[1] ?? '',
      { group: 'billing', subscriptions: { orders: '*' } },
      (message) => {
        if (message.deliveryAttempt === 1) return ConsumeResult.FAILURE;
        succeeded.add(text(message.body));
        onSuccess();
        return ConsumeResult.SUCCESS;
      },
    );
    await using producer = await startProducer(endpoints, { maxAttempts: 10 });
    const acknowledged: string[] = [];
    const sendAll = async (from: number, count: number) => {
      for (let i = from; i < from + count; i++) {
        try {
          await producer.send({ topic: 'orders', body: `m${i}` });
          acknowledged.push(`m${i}`);
        } catch {
          // Not acknowledged (the owner died under it): the rule says nothing about it.
        }
      }
    };
    await sendAll(0, 100);
    const beforeKill = acknowledged.length;
    await Promise.all([owner.kill9(), sendAll(100, 100)]);
    // One of the standbys owns the store now: the other keeps relaying to it.
    await Promise.race(standbys.map((broker) => broker.listening(60_000)));
    await sendAll(200, 20);
    expect(beforeKill).toBe(100);
    expect(acknowledged.filter((body) => Number(body.slice(1)) >= 200).length).toBeGreaterThan(0);
    // Bounded by the test's timeout: it fails there, naming nothing, if a message never comes back.
    await new Promise<void>((resolve) => {
      onSuccess = () => {
        if (acknowledged.every((body) => succeeded.has(body))) resolve();
      };
      onSuccess();
    });
    expect(consumer.deliveries.length).toBeGreaterThanOrEqual(acknowledged.length * 2);
  });
});
