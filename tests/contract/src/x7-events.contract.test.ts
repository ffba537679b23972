import { connect } from 'node:net';
import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { startProducer } from './support/clients.js';
import { EventListener } from './support/event-stream.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { AuthFileFixture, adminRequest } from './support/security.js';
import { startBroker, type TestBroker } from './support/test-broker.js';
import { onPostgres } from './support/test-store.js';

/** A group whose every message goes to the DLQ after its one delivery fails. */
async function deadLetteringGroup(broker: TestBroker, group: string) {
  await broker.admin.putGroup(group, { startFrom: 'earliest', maxRetries: 0 });
  return startRecordingConsumer(
    broker.endpoint,
    { group, subscriptions: { orders: '*' } },
    () => ConsumeResult.FAILURE,
  );
}

async function metricsText(broker: TestBroker): Promise<string> {
  return (await broker.admin.fetch('GET', '/metrics')).text();
}

describe('X7: GET /v1/events streams what happens to groups as server-sent events', () => {
  it('streams a dead-lettered message with its DLQ entry, and pauses and resumes with why', async () => {
    await using broker = await startBroker();
    await using events = await EventListener.open(broker.endpoint);
    await using _consumer = await deadLetteringGroup(broker, 'billing');
    await using producer = await startProducer(broker.endpoint);
    const { messageId } = await producer.send({ topic: 'orders', body: 'poison' });

    const dead = await events.next((event) => event.type === 'dead_lettered');
    const [listed] = (await broker.admin.listDlq('billing')).messages;
    // The entry is the DLQ listing's, field for field.
    expect(dead).toMatchObject({ type: 'dead_lettered', group: 'billing', entry: listed });
    expect(dead.type === 'dead_lettered' && dead.entry).toMatchObject({
      messageId,
      originTopic: 'orders',
      attempts: 1,
    });

    await broker.admin.fetch('POST', '/v1/groups/billing/pause');
    await broker.admin.fetch('POST', '/v1/groups/billing/resume');
    expect(await events.next((event) => event.type === 'group_paused')).toMatchObject({
      group: 'billing',
      cause: 'manual',
      why: 'paused by hand',
    });
    expect(await events.next((event) => event.type === 'group_resumed')).toMatchObject({
      group: 'billing',
      cause: 'manual',
      why: 'resumed by hand',
    });
  });

  it('streams a pause by the failure-storm rule, and the resume after its probe, with why', async () => {
    await using broker = await startBroker();
    await using events = await EventListener.open(broker.endpoint, { group: 'billing' });
    await broker.admin.putGroup('billing', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: 20 },
      pauseOnFailures: { failureRatio: 0.5, minOutcomes: 5, windowMs: 10_000, pauseMs: 100, maxPauseMs: 400 },
    });
    let healthy = false;
    await using _consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      () => (healthy ? ConsumeResult.SUCCESS : ConsumeResult.FAILURE),
    );
    await using producer = await startProducer(broker.endpoint);
    for (let i = 0; i < 5; i++) await producer.send({ topic: 'orders', body: `order ${i}` });

    expect(await events.next((event) => event.type === 'group_paused')).toMatchObject({
      cause: 'failures',
      why: 'failure-storm breaker closed → open: deliveries held',
    });
    healthy = true;
    expect(await events.next((event) => event.type === 'group_resumed')).toMatchObject({
      cause: 'failures',
      why: 'failure-storm breaker halfOpen → closed: deliveries resume',
    });
  });

  it('streams a redrive’s progress, and only the type and group asked for', async () => {
    await using broker = await startBroker();
    await using all = await EventListener.open(broker.endpoint);
    await using billingPauses = await EventListener.open(broker.endpoint, {
      type: 'group_paused',
      group: 'billing',
    });
    const consumer = await deadLetteringGroup(broker, 'billing');
    await using producer = await startProducer(broker.endpoint);
    for (let i = 0; i < 3; i++) await producer.send({ topic: 'orders', body: `order ${i}` });
    await eventually(
      () => broker.admin.getGroup('billing').then((group) => group.stats.dlq),
      (dlq) => dlq === 3,
    );
    await consumer.close();
    await broker.admin.putGroup('shipping', {});
    await broker.admin.fetch('POST', '/v1/groups/shipping/pause');
    await broker.admin.fetch('POST', '/v1/groups/billing/pause');
    await broker.admin.redrive('billing');

    expect(
      await all.next((event) => event.type === 'redrive_progress' && event.redriven === 3),
    ).toMatchObject({
      group: 'billing',
      total: 3,
    });
    await all.next((event) => event.type === 'group_paused' && event.group === 'billing');
    await billingPauses.next((event) => event.type === 'group_paused');
    // Everything reached `all`, in order; the filtered listener saw billing's pause alone.
    expect(all.events.map((event) => `${event.type} ${event.group}`)).toEqual([
      'dead_lettered billing',
      'dead_lettered billing',
      'dead_lettered billing',
      'group_paused shipping',
      'group_paused billing',
      'redrive_progress billing',
    ]);
    expect(billingPauses.events.map((event) => `${event.type} ${event.group}`)).toEqual([
      'group_paused billing',
    ]);
  });

  it('a principal sees only the groups it may read', async () => {
    using auth = new AuthFileFixture({
      ops: { admin: 'write' },
      'billing-service': { consume: [{ group: 'billing', topics: ['orders'] }] },
    });
    await using broker = await startBroker({ authFile: auth.path });
    const ops = auth.token('ops');
    await using billingOnly = await EventListener.open(broker.endpoint, {}, auth.token('billing-service'));
    await using everything = await EventListener.open(broker.endpoint, {}, ops);
    for (const group of ['shipping', 'billing']) {
      expect(
        (await adminRequest(broker.endpoint, 'PUT', `/v1/groups/${group}`, { token: ops, body: {} })).status,
      ).toBe(200);
      expect(
        (await adminRequest(broker.endpoint, 'POST', `/v1/groups/${group}/pause`, { token: ops })).status,
      ).toBe(200);
    }
    await everything.next((event) => event.group === 'billing');
    await billingOnly.next((event) => event.group === 'billing');
    expect(everything.events.map((event) => event.group)).toEqual(['shipping', 'billing']);
    expect(billingOnly.events.map((event) => event.group)).toEqual(['billing']);
    // Without a token, no stream at all.
    expect((await adminRequest(broker.endpoint, 'GET', '/v1/events')).status).toBe(401);
  });

  // The drop is the admin API's, whatever the store; on PostgreSQL the ~20 MB of bodies this needs
  // take longer than a test should, so it runs on the embedded store.
  it.skipIf(onPostgres())(
    'drops a listener that never reads, with a count, while sends and the other listeners go on',
    async () => {
      await using broker = await startBroker();
      await using reader = await EventListener.open(broker.endpoint, { type: 'dead_lettered' });
      // A listener that asks for the stream and then never reads a byte of it.
      const { port } = new URL(broker.endpoint.replace(/^ws/, 'http'));
      const stuck = connect(Number(port), '127.0.0.1');
      const stuckClosed = new Promise<void>((resolve) => stuck.once('close', () => resolve()));
      stuck.on('error', () => {});
      await new Promise<void>((resolve) => stuck.once('connect', () => resolve()));
      stuck.write('GET /v1/events HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n');
      stuck.pause();
      await eventually(
        () => metricsText(broker),
        (text) => /^ricochet_events_listeners 2$/m.test(text),
      );

      // 80 dead-lettered messages of 256 KiB: each event carries the body, ~28 MB in all, more than
      // the stuck socket's buffers (a few MB) and the 16 MiB a listener may have waiting. They go in
      // rounds of 10, the next once the reader has seen the last: 28 MB dead-lettered in one burst
      // would be more than any listener may have waiting, and the reader is there to show that one
      // that keeps reading stays.
      await using _consumer = await deadLetteringGroup(broker, 'billing');
      await using producer = await startProducer(broker.endpoint);
      const body = new Uint8Array(256 * 1024).fill(7);
      for (let round = 0; round < 8; round += 1) {
        const sent = await Promise.all(
          Array.from({ length: 10 }, () => producer.send({ topic: 'orders', body })),
        );
        for (const { messageId } of sent) {
          await reader.next((event) => event.type === 'dead_lettered' && event.entry.messageId === messageId);
        }
      }
      await eventually(
        () => metricsText(broker),
        (text) => /^ricochet_events_listeners_dropped_total 1$/m.test(text),
      );
      expect(reader.events).toHaveLength(80);
      stuck.resume();
      await stuckClosed;
      // The broker goes on as before: another send, dead-lettered, reaches the reader.
      const after = await producer.send({ topic: 'orders', body: 'after' });
      await reader.next(
        (event) => event.type === 'dead_lettered' && event.entry.messageId === after.messageId,
      );
      expect(await metricsText(broker)).toMatch(/^ricochet_events_listeners 1$/m);
    },
  );
});
