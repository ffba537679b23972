import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { groupStats, putGroup } from '../admin.js';
import { runPool } from '../pool.js';
import { type ResidentMemory, startBrokerProcess } from '../processes.js';
import { type RetrySummary, runW4 } from './w4-retry.js';

export const PENDING_RETRIES = 1_000_000;
const BODY = randomBytes(64);

export interface PendingRetriesSummary {
  readonly pending: number;
  readonly before: ResidentMemory;
  readonly withPending: ResidentMemory;
  readonly w4WithPending: RetrySummary;
}

/**
 * A million messages each failed once with a one-hour retry: the broker's RSS with all of them
 * WaitingRetry, and W4's lateness measured again on the same broker while they stay pending.
 */
export async function runPendingRetries(): Promise<PendingRetriesSummary> {
  await using broker = await startBrokerProcess();
  const before = broker.memory();
  await putGroup(broker.endpoint, 'parked', {
    startFrom: 'earliest',
    retryPolicy: { type: 'fixed', delayMs: 60 * 60 * 1_000 },
  });
  const producer = new Producer({ endpoint: broker.endpoint });
  await runPool(
    PENDING_RETRIES,
    1_000,
    async () => void (await producer.send({ topic: 'parked', body: BODY })),
  );
  await producer.close();
  let failed = 0;
  let allFailed: () => void = () => {};
  const done = new Promise<void>((resolve) => (allFailed = resolve));
  const consumer = new PushConsumer({
    endpoint: broker.endpoint,
    group: 'parked',
    subscriptions: { parked: '*' },
    maxCachedMessages: 1_000,
    listener: () => {
      failed++;
      if (failed === PENDING_RETRIES) allFailed();
      return ConsumeResult.FAILURE;
    },
  });
  await consumer.start();
  await done;
  await consumer.close();
  const stats = await groupStats(broker.endpoint, 'parked');
  const withPending = broker.memory();
  const w4WithPending = await runW4(broker, 'w4-with-pending');
  return { pending: stats.waitingRetry ?? 0, before, withPending, w4WithPending };
}
