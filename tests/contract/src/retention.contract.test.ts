import { describe, expect, it } from 'vitest';
import type { TopicView } from './support/admin.js';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { clusterCounter } from './support/cluster-metrics.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { expectInLogOrder, expectNewOffsets, expectTopicStats } from './support/store-queues.js';
import { startBroker, type TestBroker } from './support/test-broker.js';
import { storeQueues } from './support/test-store.js';

/**
 * Millisecond-scale retention over the wire: the dedup window is 0 (a message is never deleted
 * within it), passes run when the test asks for them (`runRetentionPass`) and by themselves only
 * once a minute.
 */
const RETENTION_CONFIG = { dedupWindowMs: 0, retentionCheckIntervalMs: 60_000 } as const;

/** Run retention passes until the topic's stats satisfy `holds`: expiry needs real time to pass. */
async function passUntil(
  broker: TestBroker,
  topic: string,
  holds: (stats: TopicView['stats']) => boolean,
): Promise<TopicView['stats']> {
  const view = await eventually(
    async () => {
      await broker.runRetentionPass();
      return broker.admin.getTopic(topic);
    },
    (topicView) => holds(topicView.stats),
    10_000,
  );
  return view.stats;
}

describe('Retention by age (DESIGN.md §5): expired messages go, held ones stay, laggards skip ahead', () => {
  it('deletes acked and unconsumed messages past retentionMs, keeps a leased one until it is settled, and moves a lagging cursor', async () => {
    await using broker = await startBroker(RETENTION_CONFIG);
    await broker.admin.putTopic('orders', { type: 'normal', retentionMs: 150 });
    await broker.admin.putGroup('billing', { startFrom: 'earliest' });
    await broker.admin.putGroup('audit', { startFrom: 'earliest' });
    await using billing = await startSimpleConsumer(broker.endpoint, {
      group: 'billing',
      subscriptions: { orders: '*' },
      awaitDurationMs: 0,
    });
    // Registered before the sends: audit's cursor is at 0 and stays there.
    await using audit = await startSimpleConsumer(broker.endpoint, {
      group: 'audit',
      subscriptions: { orders: '*' },
      awaitDurationMs: 0,
    });
    await using producer = await startProducer(broker.endpoint);
    const sent = [];
    for (let i = 0; i < 6; i++) sent.push(await producer.send({ topic: 'orders', body: `m${i}` }));

    const received = await billing.receive(6, 60_000);
    expectInLogOrder(
      received.map((m) => text(m.body)),
      ['m0', 'm1', 'm2', 'm3', 'm4', 'm5'],
    );
    // m0–m3 and m5 acked; m4 stays leased (60 s).
    const held = received.find((m) => text(m.body) === 'm4');
    if (!held) throw new Error('no m4');
    for (const message of received) if (message !== held) await billing.ack(message);

    // Everything expires but m4, which billing holds: it survives, and the messages around it go.
    const stats = await passUntil(broker, 'orders', (s) => s.messages === 1);
    expectTopicStats(stats, { firstOffset: 4, nextOffset: 6, messages: 1 });
    // The leased message stays, with its index entry; the expired ones are gone with theirs.
    expect((await broker.admin.getMessage(sent[4]?.messageId ?? '')).message.messageId).toBe(
      sent[4]?.messageId,
    );
    expect((await broker.admin.fetch('GET', `/v1/messages/${sent[0]?.messageId}`)).status).toBe(404);
    expect((await broker.admin.fetch('GET', `/v1/messages/${sent[5]?.messageId}`)).status).toBe(404);
    // audit never consumed: its cursor skipped the six expired messages, counted per group. With
    // queues spread, each owner passes on its own: the one holding m4 may have passed before m4
    // expired (m5's owner after m5 did), so passes go on until audit has skipped m4 too.
    await eventually(
      async () => {
        await broker.runRetentionPass();
        return (await broker.admin.getGroup('audit')).stats;
      },
      (auditStats) => auditStats.ready === 0,
      10_000,
    );
    expect((await broker.admin.getGroup('audit')).stats).toMatchObject({
      ready: 0,
      topics: { orders: { cursor: 6, firstOffset: stats.firstOffset } },
    });
    expect(await clusterCounter(broker, 'ricochet_messages_expired_total{group="audit"}')).toBe(6);
    expect(await clusterCounter(broker, 'ricochet_messages_expired_total{group="billing"}')).toBe(0);
    expect(await audit.receive(10, 60_000)).toEqual([]);

    // Once billing settles m4, the next pass deletes it too.
    await billing.ack(held);
    expect((await broker.runRetentionPass()).deletedMessages).toBe(1);
    expect((await broker.admin.getTopic('orders')).stats).toEqual({
      firstOffset: 6,
      nextOffset: 6,
      messages: 0,
    });
  });

  it('keeps the first offset across a restart when every message expired, so offsets are never reused', async () => {
    const first = await startBroker(RETENTION_CONFIG);
    await first.admin.putTopic('orders', { type: 'normal', retentionMs: 50 });
    const earlier: number[] = [];
    {
      await using producer = await startProducer(first.endpoint);
      for (let i = 0; i < 3; i++)
        earlier.push((await producer.send({ topic: 'orders', body: `m${i}` })).offset);
    }
    expect(await passUntil(first, 'orders', (s) => s.messages === 0)).toEqual({
      firstOffset: 3,
      nextOffset: 3,
      messages: 0,
    });
    await using broker = await first.restart();
    expect((await broker.admin.getTopic('orders')).stats).toEqual({
      firstOffset: 3,
      nextOffset: 3,
      messages: 0,
    });
    await using producer = await startProducer(broker.endpoint);
    expectNewOffsets([(await producer.send({ topic: 'orders', body: 'after' })).offset], 3, earlier);
  });

  it('keeps a WaitingRetry message until its retry settles, and expires a DLQ entry after the group’s dlqRetentionMs', async () => {
    await using broker = await startBroker(RETENTION_CONFIG);
    await broker.admin.putTopic('orders', { type: 'normal', retentionMs: 50 });
    await broker.admin.putGroup('patient', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: 60_000 },
    });
    await broker.admin.putGroup('strict', { startFrom: 'earliest', maxRetries: 0, dlqRetentionMs: 100 });
    expect((await broker.admin.getGroup('strict')).config.dlqRetentionMs).toBe(100);
    await using patient = await startRecordingConsumer(
      broker.endpoint,
      { group: 'patient', subscriptions: { orders: '*' } },
      () => ({ type: 'failure' }),
    );
    await using strict = await startRecordingConsumer(
      broker.endpoint,
      { group: 'strict', subscriptions: { orders: '*' } },
      () => ({ type: 'failure' }),
    );
    await using producer = await startProducer(broker.endpoint);
    const poison = await producer.send({ topic: 'orders', body: 'poison' });
    await Promise.all([patient.delivered(1), strict.delivered(1)]);
    await eventually(
      () => broker.admin.getGroup('patient'),
      (group) => group.stats.waitingRetry === 1,
    );
    await eventually(
      () => broker.admin.listDlq('strict'),
      (page) => page.messages.length === 1,
    );
    // The DLQ topic shows the retention it keeps: its group's.
    expect((await broker.admin.getTopic('%DLQ%strict')).config.retentionMs).toBe(100);

    const dlqStats = await passUntil(broker, '%DLQ%strict', (s) => s.messages === 0);
    expect(dlqStats).toEqual({ firstOffset: 1, nextOffset: 1, messages: 0 });
    expect((await broker.admin.listDlq('strict')).messages).toEqual([]);
    // The origin message is older than its retention, but patient's retry still holds it.
    expect((await broker.admin.getTopic('orders')).stats).toEqual({
      firstOffset: 0,
      nextOffset: 1,
      messages: 1,
    });
    expect((await broker.admin.getGroup('patient')).stats.waitingRetry).toBe(1);
    expect((await broker.admin.getMessage(poison.messageId)).message.offset).toBe(poison.offset);
  });
});

describe('Retention by size and the dedup window', () => {
  it('keeps at most retentionBytes of bodies, oldest deleted first', async () => {
    await using broker = await startBroker(RETENTION_CONFIG);
    await broker.admin.putTopic('logs', { type: 'normal', retentionBytes: 3_000 });
    await using producer = await startProducer(broker.endpoint);
    const queues = storeQueues();
    // With queues, each keeps its share of the topic's bytes: a quarter each of 4, for example.
    const bodyBytes = Math.floor(1_000 / queues);
    const sent: string[] = [];
    for (let i = 0; i < 10 * queues; i++) {
      sent.push((await producer.send({ topic: 'logs', body: 'x'.repeat(bodyBytes) })).messageId);
    }
    const report = await broker.runRetentionPass();
    const { stats } = await broker.admin.getTopic('logs');
    expect(stats.messages * bodyBytes).toBeLessThanOrEqual(3_000);
    expect(report.deletedMessages).toBe(sent.length - stats.messages);
    if (queues === 1) expect(stats).toEqual({ firstOffset: 7, nextOffset: 10, messages: 3 });
    // The oldest went first: the newest message is kept.
    expect((await broker.admin.getMessage(sent.at(-1) ?? '')).message.messageId).toBe(sent.at(-1));
    if (queues > 1) return;
    await producer.send({ topic: 'logs', body: 'x'.repeat(1_000) });
    await broker.runRetentionPass();
    expect((await broker.admin.getTopic('logs')).stats).toEqual({
      firstOffset: 8,
      nextOffset: 11,
      messages: 3,
    });
  });

  it('never deletes a message within the dedup window, so a retried send is still answered as a duplicate (R3)', async () => {
    await using broker = await startBroker({ dedupWindowMs: 60_000, retentionCheckIntervalMs: 60_000 });
    await broker.admin.putTopic('orders', { type: 'normal', retentionMs: 1, retentionBytes: 1 });
    await using producer = await startProducer(broker.endpoint);
    const messageId = '019aa6b1f2c07d3e8a41b5c6d7e8f902';
    const first = await producer.send({ topic: 'orders', body: 'once', messageId });
    await producer.send({ topic: 'orders', body: 'other' });
    expect((await broker.runRetentionPass()).deletedMessages).toBe(0);
    // Answered with the original receipt, not stored at a new offset.
    expect(await producer.send({ topic: 'orders', body: 'once', messageId })).toEqual(first);
    expect((await broker.admin.getTopic('orders')).stats).toEqual({
      firstOffset: 0,
      nextOffset: 2,
      messages: 2,
    });
  });
});
