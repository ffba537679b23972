import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemTimers, type TimerHandle, type TimerService } from '@ricochet/broker';
import { ConsumeResult } from '@ricochet/push-consumer';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AdminApi, type MessageView } from './support/admin.js';
import { startProducer } from './support/clients.js';
import { CrashableStore, startCrashableBroker } from './support/crashable-store.js';
import { startRecordingConsumer } from './support/push.js';
import { startBroker } from './support/test-broker.js';
import { storeQueues } from './support/test-store.js';

const GROUP = 'billing';
const TOPIC = 'orders';
const SENT_BEFORE_CRASH = 10;

let dataDir: string;

beforeEach(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'ricochet-successes-'));
});

afterEach(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * Node's timers until {@link hold}; from then on a new timer never fires. The broker's write-behind
 * flush, which would store the group's cursor past the acked messages within 100 ms, so never
 * runs: the crash lands inside its window however slow the machine is.
 */
class HoldableTimers implements TimerService {
  #holding = false;

  hold(): void {
    this.#holding = true;
  }

  setTimer(delayMs: number, callback: () => void): TimerHandle {
    if (this.#holding) return { cancel: () => {} };
    return systemTimers.setTimer(delayMs, callback);
  }
}

/** The offsets a cursor record says the group is done with: below its cursor, or marked settled. */
function settledOffsetsOf(record: unknown): Set<number> | undefined {
  const cursor = record as { group: string; topic: string; nextOffset: number; settledAhead?: number[] };
  if (cursor.group !== GROUP || cursor.topic !== TOPIC || cursor.settledAhead === undefined) return undefined;
  const settled = new Set<number>();
  for (let offset = 0; offset < cursor.nextOffset; offset++) settled.add(offset);
  for (let i = 0; i + 1 < cursor.settledAhead.length; i += 2) {
    for (
      let offset = cursor.settledAhead[i] as number;
      offset < (cursor.settledAhead[i + 1] as number);
      offset++
    )
      settled.add(offset);
  }
  return settled;
}

/** Where a message stands for `group`, with its history (`GET /v1/messages/:id`). */
async function groupViewOf(
  admin: AdminApi,
  messageId: string,
  group: string,
): Promise<MessageView['groups'][number] | undefined> {
  return (await admin.getMessage(messageId)).groups.find((view) => view.group === group);
}

// The crash is staged on one store's cursor; a split store has one per queue (as in r1's crash test).
describe.skipIf(storeQueues() > 1)('C2 with `history: failures`: a success leaves no history entry', () => {
  it('and a crash before the cursor is stored delivers none of the acked messages again', async () => {
    const crash = new CrashableStore();
    const timers = new HoldableTimers();
    {
      const { broker, url, port } = await startCrashableBroker(dataDir, crash, { timers });
      const admin = new AdminApi(`http://127.0.0.1:${port}`);
      await admin.putGroup(GROUP, { startFrom: 'earliest' });
      const producer = await startProducer(url);
      for (let i = 0; i < SENT_BEFORE_CRASH; i++) await producer.send({ topic: TOPIC, body: `before ${i}` });
      await producer.close();
      timers.hold();
      // Queued by the acks' turns, each with the stored cursor (0: the flush never ran).
      const allMarked = crash.written(({ method, args }) => {
        if (method !== 'putCursor') return false;
        const settled = settledOffsetsOf(args[0]);
        return settled !== undefined && settled.size >= SENT_BEFORE_CRASH;
      });
      const consumer = await startRecordingConsumer(
        url,
        { group: GROUP, subscriptions: { [TOPIC]: '*' } },
        () => ConsumeResult.SUCCESS,
      );
      await consumer.delivered(SENT_BEFORE_CRASH);
      await allMarked;
      crash.crash();
      await consumer.close();
      await broker.close();
    }

    await using broker = await startBroker({}, dataDir);
    await using consumer = await startRecordingConsumer(
      broker.endpoint,
      { group: GROUP, subscriptions: { [TOPIC]: '*' } },
      () => ConsumeResult.SUCCESS,
    );
    await using producer = await startProducer(broker.endpoint);
    const { messageId: after } = await producer.send({ topic: TOPIC, body: 'after the restart' });
    // Deliveries follow the log: an acked message handed out again would come before the new one.
    await consumer.delivered(1);
    expect(consumer.deliveries.map(({ message }) => message.messageId)).toEqual([after]);
  });

  it('keeps failures; `history: full` keeps the success too', async () => {
    await using broker = await startBroker();
    await broker.admin.putGroup(GROUP, {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: 20 },
    });
    await broker.admin.putGroup('audit', {
      startFrom: 'earliest',
      retryPolicy: { type: 'fixed', delayMs: 20 },
      history: 'full',
    });
    await using producer = await startProducer(broker.endpoint);
    const { messageId } = await producer.send({ topic: TOPIC, body: 'fails once' });
    const failOnce = (message: { deliveryAttempt: number }) =>
      message.deliveryAttempt === 1 ? ConsumeResult.FAILURE : ConsumeResult.SUCCESS;
    await using billing = await startRecordingConsumer(
      broker.endpoint,
      { group: GROUP, subscriptions: { [TOPIC]: '*' } },
      failOnce,
    );
    await using audit = await startRecordingConsumer(
      broker.endpoint,
      { group: 'audit', subscriptions: { [TOPIC]: '*' } },
      failOnce,
    );
    await Promise.all([billing.delivered(2), audit.delivered(2)]);
    await expect
      .poll(async () => (await broker.admin.getGroup('audit')).stats.committed, { timeout: 10_000 })
      .toBe(1);
    await expect
      .poll(async () => (await broker.admin.getGroup(GROUP)).stats.committed, { timeout: 10_000 })
      .toBe(1);

    const failuresOnly = await groupViewOf(broker.admin, messageId, GROUP);
    expect(failuresOnly?.state).toBe('committed');
    expect(failuresOnly?.history.map(({ result }) => result)).toEqual(['failed']);
    const full = await groupViewOf(broker.admin, messageId, 'audit');
    expect(full?.state).toBe('committed');
    expect(full?.history.map(({ result }) => result)).toEqual(['failed', 'committed']);
  });
});
