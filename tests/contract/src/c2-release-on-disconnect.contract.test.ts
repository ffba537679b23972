import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConsumeResult } from '@ricochet/push-consumer';
import { describe, expect, it } from 'vitest';
import { AdminApi } from './support/admin.js';
import { startChildBroker } from './support/child-broker.js';
import { startProducer } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';

describe('C2: a push consumer that disconnects releases its inflight messages; a release is not a failure', () => {
  it('hands a closing consumer’s unfinished deliveries to another, at the same attempt, without using a retry', async () => {
    await using broker = await startBroker();
    // maxRetries 0: a single counted failure would dead-letter the message.
    await broker.admin.putGroup('billing', { startFrom: 'earliest', maxRetries: 0 });
    let unblock: () => void = () => {};
    const stuck = new Promise<void>((resolve) => (unblock = resolve));
    const leaving = await startRecordingConsumer(
      broker.endpoint,
      {
        group: 'billing',
        subscriptions: { orders: '*' },
        closeTimeoutMs: 50,
        concurrency: 1,
        maxCachedMessages: 10,
      },
      async () => {
        await stuck;
        return ConsumeResult.SUCCESS;
      },
    );
    await using producer = await startProducer(broker.endpoint);
    const sent = await Promise.all(['a', 'b', 'c'].map((body) => producer.send({ topic: 'orders', body })));
    await leaving.delivered(1);
    // One message is running in the stuck listener, one waits in its cache (the credit window of
    // one listener is 2) and one at the broker: close gives up on the first after 50 ms and
    // releases the cached one; the disconnect releases the first (C2).
    await leaving.close();
    unblock();

    await using staying = await startRecordingConsumer(
      broker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      () => ConsumeResult.SUCCESS,
    );
    const deliveries = await staying.delivered(3);
    expect(new Set(deliveries.map((d) => d.message.messageId))).toEqual(
      new Set(sent.map((s) => s.messageId)),
    );
    expect(deliveries.map((d) => d.message.deliveryAttempt)).toEqual([1, 1, 1]);
    const stats = (await broker.admin.getGroup('billing')).stats;
    expect(stats.dlq).toBe(0);
    // The message the stuck listener was running (sent[0] with one queue) was released by the disconnect.
    const running = leaving.deliveries[0]?.message.messageId ?? '';
    const history = (await broker.admin.getMessage(running)).groups[0]?.history ?? [];
    expect(history[0]).toMatchObject({ result: 'released', deliveryAttempt: 1 });
  });

  it('releases the deliveries that were inflight when the broker was killed, once it restarts', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-c2-crash-'));
    try {
      let messageId = '';
      {
        await using child = await startChildBroker(dataDir);
        const admin = new AdminApi(child.endpoint.replace(/^ws/, 'http'));
        await admin.putGroup('billing', { startFrom: 'earliest', maxRetries: 0 });
        const stuck = await startRecordingConsumer(
          child.endpoint,
          { group: 'billing', subscriptions: { orders: '*' }, closeTimeoutMs: 10 },
          () => new Promise(() => {}),
        );
        const producer = await startProducer(child.endpoint);
        messageId = (await producer.send({ topic: 'orders', body: 'x' })).messageId;
        await stuck.delivered(1);
        // The lease record is written with the delivery; wait until the broker counts it inflight.
        await eventually(
          () => admin.getGroup('billing'),
          (group) => group.stats.inflight === 1,
        );
        await child.kill9();
        await Promise.all([producer.close({ drainTimeoutMs: 0 }), stuck.close()]);
      }
      await using broker = await startBroker({}, dataDir);
      await using consumer = await startRecordingConsumer(
        broker.endpoint,
        { group: 'billing', subscriptions: { orders: '*' } },
        () => ConsumeResult.SUCCESS,
      );
      const [delivery] = await consumer.delivered(1);
      // Released, not failed: the same attempt, and maxRetries 0 did not dead-letter it.
      expect(delivery?.message).toMatchObject({ messageId, deliveryAttempt: 1 });
      expect((await broker.admin.getGroup('billing')).stats.dlq).toBe(0);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
