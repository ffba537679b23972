import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AdminApi } from './support/admin.js';
import { startChildBroker } from './support/child-broker.js';
import { startProducer, startSimpleConsumer, text } from './support/clients.js';
import { eventually } from './support/push.js';
import { expectNewOffsets } from './support/store-queues.js';
import { startBroker } from './support/test-broker.js';

describe('T1: delay messages are delivered not before their time, at most 24 h ahead', () => {
  it('holds a delayMs message back while later plain messages flow, then delivers it', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup('billing', { startFrom: 'earliest' });
    await using producer = await startProducer(broker.endpoint);
    const sentAt = Date.now();
    // 2 s: long enough that the plain message is received first even on a loaded machine.
    await producer.send({ topic: 'orders', body: 'later', delayMs: 2_000 });
    await producer.send({ topic: 'orders', body: 'now' });
    await using consumer = await startSimpleConsumer(broker.endpoint, {
      group: 'billing',
      subscriptions: { orders: '*' },
    });
    const [first] = await consumer.receive(1, 30_000);
    expect(text(first?.body ?? new Uint8Array())).toBe('now');
    const [delayed] = await consumer.receive(1, 30_000);
    expect(text(delayed?.body ?? new Uint8Array())).toBe('later');
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(2_000);
    expect(delayed?.deliveryAttempt).toBe(1);
  });

  it('accepts deliverAt, refuses more than the horizon ahead, and guards delay topics', async () => {
    await using broker = await startBroker({ maxDelayMs: 60_000 });
    await broker.admin.putTopic('reminders', { type: 'delay' });
    await using producer = await startProducer(broker.endpoint);
    await expect(
      producer.send({ topic: 'orders', body: 'x', deliverAt: Date.now() + 120_000 }),
    ).rejects.toMatchObject({ code: 400 });
    await expect(producer.send({ topic: 'reminders', body: 'no delay' })).rejects.toMatchObject({
      code: 409,
    });
    const atTime = await producer.send({ topic: 'reminders', body: 'ok', deliverAt: Date.now() + 1_000 });
    const atLevel = await producer.send({ topic: 'reminders', body: 'level 1 = 1 s', delayLevel: 1 });
    expectNewOffsets([atTime.offset, atLevel.offset]);
  });

  it('keeps a delay message across a kill -9, before and after its time came', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-delay-crash-'));
    try {
      {
        await using child = await startChildBroker(dataDir);
        const admin = new AdminApi(child.endpoint.replace(/^ws/, 'http'));
        await admin.putGroup('billing', { startFrom: 'earliest' });
        const producer = await startProducer(child.endpoint);
        // 2 s: the receive below must come before it is due, and a consumer connecting to a child
        // broker on a loaded machine can take hundreds of ms.
        await producer.send({ topic: 'orders', body: 'soon', delayMs: 2_000 });
        await producer.send({ topic: 'orders', body: 'later', delayMs: 60_000 });
        // A receive makes the group pass both messages: each is parked until its time.
        const consumer = await startSimpleConsumer(child.endpoint, {
          group: 'billing',
          subscriptions: { orders: '*' },
          awaitDurationMs: 0,
        });
        expect(await consumer.receive(10, 30_000)).toEqual([]);
        // The first comes due and waits, Ready, for a consumer; the second is still parked.
        await eventually(
          () => admin.getGroup('billing'),
          (group) => group.stats.ready === 1,
          15_000,
        );
        await child.kill9();
        await Promise.all([producer.close({ drainTimeoutMs: 0 }), consumer.close({ drainTimeoutMs: 0 })]);
      }
      await using broker = await startBroker({}, dataDir);
      await using consumer = await startSimpleConsumer(broker.endpoint, {
        group: 'billing',
        subscriptions: { orders: '*' },
        awaitDurationMs: 2_000,
      });
      const received = await consumer.receive(10, 30_000);
      expect(received.map((message) => text(message.body))).toEqual(['soon']);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
