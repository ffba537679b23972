import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTestBroker } from './broker.test-support.js';
import { RawClient } from './gateway/raw-client.test-support.js';
import { openLmdbStore } from './store/lmdb-store.js';

const MESSAGE_ID = '10000000000000000000000000000001';
const LATER_MESSAGE_ID = '10000000000000000000000000000002';

let dataDir: string;

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'ricochet-recovery-'));
});

afterEach(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

async function subscribe(url: string): Promise<RawClient> {
  const consumer = await RawClient.connect(url);
  const subscribed = await consumer.request({
    type: 'subscribe',
    group: 'billing',
    subscriptions: { orders: '*' },
    maxCachedMessages: 10,
  });
  expect(subscribed.type).toBe('subscribed');
  return consumer;
}

describe('recovery after a restart', () => {
  it('makes Ready a WaitingRetry whose schedule entry the scheduler had already taken', async () => {
    // First life: a nack parks the message in WaitingRetry for an hour.
    {
      await using broker = await startTestBroker({ dataDir });
      const response = await fetch(`http://127.0.0.1:${broker.address?.port}/v1/groups/billing`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ maxRetries: 3, retryPolicy: { type: 'fixed', delayMs: 3_600_000 } }),
      });
      expect(response.status).toBe(200);
      const consumer = await subscribe(broker.url);
      const producer = await RawClient.connect(broker.url);
      await producer.request({
        type: 'send',
        messages: [{ messageId: MESSAGE_ID, topic: 'orders', body: new Uint8Array([1]), bornAt: 1 }],
      });
      const delivered = await consumer.next((frame) => frame.type === 'deliver');
      if (delivered.type !== 'deliver') throw new Error('expected deliver');
      const nacked = await consumer.request({
        type: 'nack',
        items: [{ receiptHandle: delivered.messages[0]?.receiptHandle ?? '', reason: 'boom' }],
      });
      expect(nacked).toMatchObject({ type: 'settled', failures: [] });
      await Promise.all([consumer.close(), producer.close()]);
    }

    // The crash window: the scheduler took the entry (committed) but the Ready state it moved the
    // delivery to was still in write-behind memory. Reproduce that state on disk.
    const store = openLmdbStore({ path: dataDir });
    const keys = store.scheduleKeys('billing', 10);
    expect(keys).toHaveLength(1);
    await store.deleteSchedule(keys[0] as (typeof keys)[number]);
    await store.close();

    // Second life: the retry is delivered at once, not lost in WaitingRetry forever.
    await using broker = await startTestBroker({ dataDir });
    const consumer = await subscribe(broker.url);
    const redelivered = await consumer.next((frame) => frame.type === 'deliver');
    if (redelivered.type !== 'deliver') throw new Error('expected deliver');
    expect(redelivered.messages[0]).toMatchObject({ messageId: MESSAGE_ID, deliveryAttempt: 2 });
    await consumer.close();
  });

  it('does not deliver again a message committed past the stored cursor', async () => {
    // First life: one message delivered and acked.
    {
      await using broker = await startTestBroker({ dataDir });
      const consumer = await subscribe(broker.url);
      const producer = await RawClient.connect(broker.url);
      await producer.request({
        type: 'send',
        messages: [{ messageId: MESSAGE_ID, topic: 'orders', body: new Uint8Array([1]), bornAt: 1 }],
      });
      const delivered = await consumer.next((frame) => frame.type === 'deliver');
      if (delivered.type !== 'deliver') throw new Error('expected deliver');
      const acked = await consumer.request({
        type: 'ack',
        receiptHandles: [delivered.messages[0]?.receiptHandle ?? ''],
      });
      expect(acked).toMatchObject({ type: 'settled', failures: [] });
      await Promise.all([consumer.close(), producer.close()]);
    }

    // The crash window: the ack committed, the cursor passing the message was still in
    // write-behind memory. Put the stored cursor back to reproduce that state.
    const store = openLmdbStore({ path: dataDir });
    expect(store.listCursors()).toEqual([{ group: 'billing', topic: 'orders', nextOffset: 1 }]);
    await store.putCursor({ group: 'billing', topic: 'orders', nextOffset: 0 });
    await store.close();

    // Second life: the next delivery is the next message, not the committed one again.
    await using broker = await startTestBroker({ dataDir });
    const consumer = await subscribe(broker.url);
    const producer = await RawClient.connect(broker.url);
    await producer.request({
      type: 'send',
      messages: [{ messageId: LATER_MESSAGE_ID, topic: 'orders', body: new Uint8Array([2]), bornAt: 2 }],
    });
    const next = await consumer.next((frame) => frame.type === 'deliver');
    if (next.type !== 'deliver') throw new Error('expected deliver');
    expect(next.messages.map((message) => message.messageId)).toEqual([LATER_MESSAGE_ID]);
    await Promise.all([consumer.close(), producer.close()]);
  });
});
