import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { putGroup } from '../admin.js';
import { percentile } from '../pool.js';

export const PROBE_MESSAGES = 2_000;
const PROBE_RATE_PER_SECOND = 500;
const PROBE_RETRY_DELAY_MS = 100;

export interface LatenessSummary {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Short retries at a gentle pace, to time the scheduler rather than a burst: 2,000 messages sent
 * at 500/s, each failing its first delivery with a 100 ms retry. Lateness is the gap between the
 * failure and the redelivery, both seen by the listener, minus the 100 ms asked for.
 */
export async function runRetryProbe(endpoint: string, topic: string): Promise<LatenessSummary> {
  const group = `${topic}-group`;
  await putGroup(endpoint, group, {
    startFrom: 'earliest',
    retryPolicy: { type: 'fixed', delayMs: PROBE_RETRY_DELAY_MS },
  });
  const failedAt = new Map<string, number>();
  const lateness: number[] = [];
  let allRetried: () => void = () => {};
  const done = new Promise<void>((resolve) => (allRetried = resolve));
  const consumer = new PushConsumer({
    endpoint,
    group,
    subscriptions: { [topic]: '*' },
    listener: (message) => {
      if (message.deliveryAttempt === 1) {
        failedAt.set(message.messageId, performance.now());
        return ConsumeResult.FAILURE;
      }
      const failed = failedAt.get(message.messageId);
      if (failed !== undefined) lateness.push(performance.now() - failed - PROBE_RETRY_DELAY_MS);
      if (lateness.length === PROBE_MESSAGES) allRetried();
      return ConsumeResult.SUCCESS;
    },
  });
  await consumer.start();
  const producer = new Producer({ endpoint });
  const startedAt = performance.now();
  const sends: Promise<unknown>[] = [];
  for (let i = 0; i < PROBE_MESSAGES; i++) {
    // Paced against the clock, so a slow turn is caught up rather than stretching the run.
    const dueMs = startedAt + (i * 1_000) / PROBE_RATE_PER_SECOND;
    const waitMs = dueMs - performance.now();
    if (waitMs > 0) await sleep(waitMs);
    sends.push(producer.send({ topic, body: `probe ${i}` }));
  }
  await Promise.all(sends);
  await producer.close();
  await done;
  await consumer.close();
  return { p50Ms: percentile(lateness, 50), p99Ms: percentile(lateness, 99), maxMs: Math.max(...lateness) };
}
