import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { putGroup, startTestBroker } from './broker.test-support.js';
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

/** A consumer of group billing on topic orders, and a producer. */
async function connect(url: string): Promise<{ consumer: RawClient; producer: RawClient }> {
  const consumer = await RawClient.connect(url);
  await consumer.subscribe('billing', { orders: '*' }, 10);
  return { consumer, producer: await RawClient.connect(url) };
}

async function send(producer: RawClient, messageId: string): Promise<void> {
  const answer = await producer.request({
    type: 'send',
    messages: [{ messageId, topic: 'orders', body: new Uint8Array([1]), bornAt: 1 }],
  });
  expect(answer.type).toBe('sendResult');
}

/** A first life of the broker on `dataDir`: one message delivered, then settled by `settle`. */
async function firstLife(
  settle: (consumer: RawClient, receiptHandle: string) => Promise<void>,
  history: 'failures' | 'full' = 'failures',
) {
  await using broker = await startTestBroker({ dataDir });
  await putGroup(broker, 'billing', {
    maxRetries: 3,
    retryPolicy: { type: 'fixed', delayMs: 3_600_000 },
    history,
  });
  const { consumer, producer } = await connect(broker.url);
  await send(producer, MESSAGE_ID);
  const delivered = await consumer.nextDelivery();
  await settle(consumer, delivered.messages[0]?.receiptHandle ?? '');
  await Promise.all([consumer.close(), producer.close()]);
}

describe('recovery after a restart', () => {
  it('makes Ready a WaitingRetry whose schedule entry the scheduler had already taken', async () => {
    // A nack parks the message in WaitingRetry for an hour.
    await firstLife(async (consumer, receiptHandle) => {
      const nacked = await consumer.request({ type: 'nack', items: [{ receiptHandle, reason: 'boom' }] });
      expect(nacked).toMatchObject({ type: 'settled', failures: [] });
    });

    // The crash window of a broker that kept a due retry's Ready state in write-behind memory:
    // the scheduler took the entry (committed) once it was due, the Ready state was lost.
    // Reproduce that state on disk: the entry gone, the record's retry time passed.
    const store = openLmdbStore({ path: dataDir });
    const keys = store.scheduleKeys('billing', 10);
    expect(keys).toHaveLength(1);
    const [group, , topic, offset] = keys[0] as (typeof keys)[number];
    await store.deleteSchedule(keys[0] as (typeof keys)[number]);
    const address = { group, topic, offset };
    const record = store.getDelivery(address);
    expect(record?.state.state).toBe('waitingRetry');
    if (record)
      await store.putDelivery(address, {
        ...record,
        scheduleKey: [group, Date.now() - 1_000, topic, offset],
      });
    await store.close();

    // Second life: the retry is delivered at once, not lost in WaitingRetry forever.
    await using broker = await startTestBroker({ dataDir });
    const { consumer, producer } = await connect(broker.url);
    const redelivered = await consumer.nextDelivery();
    expect(redelivered.messages[0]).toMatchObject({ messageId: MESSAGE_ID, deliveryAttempt: 2 });
    await Promise.all([consumer.close(), producer.close()]);
  });

  // What the ack's commit left on disk before the flush stored the cursor past the message: its
  // history entry, or (a group keeping failures only) its mark on the stored cursor.
  it.each([
    { history: 'full', cursorAtAck: { group: 'billing', topic: 'orders', nextOffset: 0 } },
    {
      history: 'failures',
      cursorAtAck: { group: 'billing', topic: 'orders', nextOffset: 0, settledAhead: [0, 1] },
    },
  ] as const)(
    'does not deliver again a message committed past the stored cursor (history: $history)',
    async ({ history, cursorAtAck }) => {
      await firstLife(async (consumer, receiptHandle) => {
        const acked = await consumer.request({ type: 'ack', receiptHandles: [receiptHandle] });
        expect(acked).toMatchObject({ type: 'settled', failures: [] });
      }, history);

      // The crash window: the ack committed, the cursor passing the message was still in
      // write-behind memory. Put the stored cursor back to reproduce that state.
      const store = openLmdbStore({ path: dataDir });
      expect(store.listCursors()).toEqual([{ group: 'billing', topic: 'orders', nextOffset: 1 }]);
      await store.putCursor(cursorAtAck);
      await store.close();

      // Second life: the next delivery is the next message, not the committed one again.
      await using broker = await startTestBroker({ dataDir });
      const { consumer, producer } = await connect(broker.url);
      await send(producer, LATER_MESSAGE_ID);
      const next = await consumer.nextDelivery();
      expect(next.messages.map((message) => message.messageId)).toEqual([LATER_MESSAGE_ID]);
      await Promise.all([consumer.close(), producer.close()]);
    },
  );
});
