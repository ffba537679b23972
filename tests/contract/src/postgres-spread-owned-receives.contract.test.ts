import { rmSync } from 'node:fs';
import { createMessageId } from '@ricochet/client';
import type { SimpleConsumer } from '@ricochet/simple-consumer';
import { afterEach, describe, expect, it } from 'vitest';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import {
  adminOf,
  expectCommitted,
  forwardedMessages,
  leastOwning,
  startSpreadCluster,
  untilRoutedToLiveOwners,
} from './support/spread-cluster.js';

/**
 * Issue 42 item 1, simple consumer (DESIGN.md §9, docs/protocol/README.md#owned-receives): three
 * real brokers spread a real PostgreSQL store's queues; a simple consumer given one of them leases
 * each queue's messages from its owner (`receive.scope: 'owned'`) and acks them there, so no broker
 * relays a lease (`ricochet_cluster_forwarded_messages_total{request="deliver"}` stays put), with
 * S1–S3 as on one broker. A consumer that does not ask is forwarded for, as before. The S rules'
 * own files run spread too, with this routing on by default.
 */
const directories: string[] = [];

afterEach(() => {
  for (const dir of directories.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * Receive (32 at a time, not waiting) and ack until `count` messages were received, or 400 turns;
 * the bodies received, each as many times as it was.
 */
async function receiveAndAck(consumer: SimpleConsumer, count: number): Promise<string[]> {
  const bodies: string[] = [];
  for (let turn = 0; turn < 400 && bodies.length < count; turn++) {
    const batch = await consumer.receive(32, 30_000);
    await Promise.all(batch.map((message) => consumer.ack(message)));
    bodies.push(...batch.map((message) => text(message.body)));
  }
  return bodies;
}

describe('§9: a simple consumer leases each queue’s messages from its owner', () => {
  it('given one broker, it leases from all four queues with none forwarded, each once; one that does not ask is forwarded for', async () => {
    await using cluster = await startSpreadCluster(directories);
    const { brokers } = cluster;
    await untilRoutedToLiveOwners(brokers, 60_000);
    // The broker owning the fewest queues: the first may own all four (one cluster in 81).
    const entry = await leastOwning(brokers);
    for (const group of ['billing', 'audit']) await adminOf(entry).putGroup(group, { startFrom: 'earliest' });
    await using consumer = await startSimpleConsumer(entry.endpoint, {
      group: 'billing',
      subscriptions: { orders: '*' },
      awaitDurationMs: 0,
    });
    await using producer = await startProducer(entry.endpoint);
    // Warm: the consumer asks the owners once its sessions with them are open; until then its
    // broker forwards. 20 messages leased with nothing forwarded means every owner leased its own
    // queues' (20 ids all in the entry's queues is a (1/4)^20 chance).
    let warm = 0;
    await expect
      .poll(
        async () => {
          const before = await forwardedMessages(brokers, 'deliver');
          const bodies = Array.from({ length: 20 }, () => `w${warm++}`);
          await Promise.all(bodies.map((body) => producer.send({ topic: 'orders', body })));
          expect((await receiveAndAck(consumer, bodies.length)).sort()).toEqual(bodies.sort());
          return (await forwardedMessages(brokers, 'deliver')) - before;
        },
        { timeout: 30_000, interval: 50 },
      )
      .toBe(0);

    const before = await forwardedMessages(brokers, 'deliver');
    const bodies = Array.from({ length: 300 }, (_, n) => `m${n}`);
    const receipts = await Promise.all(
      bodies.map((body) => producer.send({ topic: 'orders', body, messageId: createMessageId() })),
    );
    expect(new Set(receipts.map((receipt) => receipt.offset % 4))).toEqual(new Set([0, 1, 2, 3]));
    // Each leased once (S2) and acked where it was leased (S3), none through another broker.
    expect((await receiveAndAck(consumer, bodies.length)).sort()).toEqual([...bodies].sort());
    expect(await receiveAndAck(consumer, 1)).toEqual([]);
    expect(await forwardedMessages(brokers, 'deliver')).toBe(before);
    await expectCommitted(entry, 'billing', warm + bodies.length);

    // A consumer that does not ask (today's hello) leases every queue's through its broker.
    await using plain = await startSimpleConsumer(entry.endpoint, {
      group: 'audit',
      subscriptions: { orders: '*' },
      awaitDurationMs: 0,
      routeToOwners: false,
    });
    const forwardedBefore = await forwardedMessages(brokers, 'deliver');
    expect(await receiveAndAck(plain, warm + bodies.length)).toHaveLength(warm + bodies.length);
    expect(await forwardedMessages(brokers, 'deliver')).toBeGreaterThan(forwardedBefore);
    await expectCommitted(entry, 'audit', warm + bodies.length);
  });
});
