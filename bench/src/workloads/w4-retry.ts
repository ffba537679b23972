import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { putGroup } from '../admin.js';
import type { MeasuredWindow } from '../measured-window.js';
import { percentile, runPool } from '../pool.js';
import type { BenchProcess } from '../processes.js';

export const W4_MESSAGES = 10_000;
const RETRY_DELAY_MS = 200;
const BODY = randomBytes(256);

export interface RetrySummary {
  /** From subscribing until every message succeeded on its second delivery. */
  readonly totalMs: number;
  /** Actual gap between a message's failure and its redelivery, minus the 200 ms asked for. */
  readonly latenessP50Ms: number;
  readonly latenessP99Ms: number;
}

/**
 * W4 retry: 10,000 messages each failing its first delivery with a 200 ms retry; total time until
 * all succeeded, and redelivery lateness (actual gap − 200 ms). Runs against `broker`, so that
 * the same broker can already hold a million pending retries.
 */
export async function runW4(
  broker: BenchProcess & { readonly endpoint: string },
  topic = 'w4',
  window?: MeasuredWindow,
): Promise<RetrySummary> {
  const group = `${topic}-group`;
  await putGroup(broker.endpoint, group, {
    startFrom: 'earliest',
    retryPolicy: { type: 'fixed', delayMs: RETRY_DELAY_MS },
  });
  const producer = new Producer({ endpoint: broker.endpoint });
  await runPool(W4_MESSAGES, 1_000, async () => void (await producer.send({ topic, body: BODY })));
  await producer.close();
  const failedAt = new Map<string, number>();
  const lateness: number[] = [];
  let allSucceeded: () => void = () => {};
  const done = new Promise<void>((resolve) => (allSucceeded = resolve));
  const consumer = new PushConsumer({
    endpoint: broker.endpoint,
    group,
    subscriptions: { [topic]: '*' },
    maxCachedMessages: 1_000,
    listener: (message) => {
      if (message.deliveryAttempt === 1) {
        failedAt.set(message.messageId, performance.now());
        return ConsumeResult.FAILURE;
      }
      lateness.push(performance.now() - (failedAt.get(message.messageId) ?? 0) - RETRY_DELAY_MS);
      if (lateness.length === W4_MESSAGES) allSucceeded();
      return ConsumeResult.SUCCESS;
    },
  });
  await window?.begin(broker);
  const startedAt = performance.now();
  await consumer.start();
  await done;
  const totalMs = performance.now() - startedAt;
  await window?.end(broker);
  await consumer.close();
  return { totalMs, latenessP50Ms: percentile(lateness, 50), latenessP99Ms: percentile(lateness, 99) };
}
