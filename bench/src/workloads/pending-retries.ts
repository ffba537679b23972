import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { groupStats, putGroup } from '../admin.js';
import { runPool } from '../pool.js';
import { type ResidentMemory, startKillableBroker } from '../processes.js';
import { restartAfterKill, type StartupTimes, storeStartupMessage } from './restart-after-kill.js';
import { type LatenessSummary, runRetryProbe } from './retry-probe.js';

export const PENDING_RETRIES = 1_000_000;
const BODY = randomBytes(64);

export interface PendingRetriesSummary {
  readonly pending: number;
  readonly sendMs: number;
  readonly failMs: number;
  readonly idle: ResidentMemory;
  readonly withPending: ResidentMemory;
  readonly afterRestart: ResidentMemory;
  readonly baselineLateness: LatenessSummary;
  readonly pendingLateness: LatenessSummary;
  readonly baselineStartup: StartupTimes;
  readonly pendingStartup: StartupTimes;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A million messages each failed once with a one-hour retry. On one broker and data directory,
 * before and after the fill: anonymous and file-backed memory, the lateness of short retries
 * (the retry probe), and the time to come back after SIGKILL until a push consumer is served.
 */
export async function runPendingRetries(): Promise<PendingRetriesSummary> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-bench-pending-'));
  let broker = await startKillableBroker(dataDir);
  try {
    await storeStartupMessage(broker.endpoint);
    const idle = broker.memory();
    const baselineLateness = await runRetryProbe(broker.endpoint, 'probe-baseline');
    let baselineStartup: StartupTimes;
    [broker, baselineStartup] = await restartAfterKill(broker, dataDir, 'startup-baseline');

    const { sendMs, failMs } = await fill(broker.endpoint);
    // Let the fill's garbage and write-behind settle before reading memory.
    await sleep(2_000);
    const withPending = broker.memory();
    const pendingLateness = await runRetryProbe(broker.endpoint, 'probe-pending');
    let pendingStartup: StartupTimes;
    [broker, pendingStartup] = await restartAfterKill(broker, dataDir, 'startup-pending');
    await sleep(2_000);
    const afterRestart = broker.memory();
    const stats = await groupStats(broker.endpoint, 'parked');
    return {
      pending: stats.waitingRetry ?? 0,
      sendMs,
      failMs,
      idle,
      withPending,
      afterRestart,
      baselineLateness,
      pendingLateness,
      baselineStartup,
      pendingStartup,
    };
  } finally {
    await broker.kill9();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Send a million messages, then fail each once under a one-hour retry policy. */
export async function fill(endpoint: string): Promise<{ sendMs: number; failMs: number }> {
  await putGroup(endpoint, 'parked', {
    startFrom: 'earliest',
    retryPolicy: { type: 'fixed', delayMs: 60 * 60 * 1_000 },
  });
  const sendStartedAt = performance.now();
  const producer = new Producer({ endpoint });
  await runPool(
    PENDING_RETRIES,
    1_000,
    async () => void (await producer.send({ topic: 'parked', body: BODY })),
  );
  await producer.close();
  const sendMs = performance.now() - sendStartedAt;
  const failStartedAt = performance.now();
  let failed = 0;
  let allFailed: () => void = () => {};
  const done = new Promise<void>((resolve) => (allFailed = resolve));
  const consumer = new PushConsumer({
    endpoint,
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
  return { sendMs, failMs: performance.now() - failStartedAt };
}
