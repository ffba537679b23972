import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { groupStats, putGroup } from '../admin.js';
import { runPool } from '../pool.js';
import { type KillableBroker, type ResidentMemory, startKillableBroker } from '../processes.js';
import { type LatenessSummary, runRetryProbe } from './retry-probe.js';

export const PENDING_RETRIES = 1_000_000;
const BODY = randomBytes(64);
const STARTUP_TOPIC = 'startup';
/** How long a restarted broker may take to serve the stored message before the bench gives up. */
const SERVED_BUDGET_MS = 120_000;

/** How long a broker took to come back after SIGKILL, from spawning it. */
export interface StartupTimes {
  /** Until it printed its URL (it listens once recovery is done). */
  readonly listeningMs: number;
  /** Until `GET /healthz` answered 200. */
  readonly healthyMs: number;
  /** Until a push consumer that subscribed after the restart received a stored message. */
  readonly pushServedMs: number;
  /** The broker's CPU time (user + system) until it listened. */
  readonly listeningCpuMs: number;
}

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
    const producer = new Producer({ endpoint: broker.endpoint });
    await producer.send({ topic: STARTUP_TOPIC, body: 'served after a restart' });
    await producer.close();
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

/**
 * SIGKILL the broker and start it again on the same data directory and port; time it until a
 * new push group (created before the kill) receives the message waiting in {@link STARTUP_TOPIC}.
 */
async function restartAfterKill(
  broker: KillableBroker,
  dataDir: string,
  group: string,
): Promise<[KillableBroker, StartupTimes]> {
  await putGroup(broker.endpoint, group, { startFrom: 'earliest' });
  await broker.kill9();
  const spawnedAt = performance.now();
  const restarted = await startKillableBroker(dataDir, broker.port);
  const listeningMs = performance.now() - spawnedAt;
  const listeningCpuMs = restarted.cpuTimeMs();
  const healthz = `${restarted.endpoint.replace(/^ws/, 'http')}/healthz`;
  for (let attempt = 0; attempt < 1_000 && (await fetch(healthz)).status !== 200; attempt++) await sleep(10);
  const healthyMs = performance.now() - spawnedAt;
  let served: () => void = () => {};
  let notServed: (error: Error) => void = () => {};
  const received = new Promise<void>((resolve, reject) => {
    served = resolve;
    notServed = reject;
  });
  const consumer = new PushConsumer({
    endpoint: restarted.endpoint,
    group,
    subscriptions: { [STARTUP_TOPIC]: '*' },
    listener: () => {
      served();
      return ConsumeResult.SUCCESS;
    },
  });
  await consumer.start();
  // Bounded: a broker that lost the group's config (or the message) must fail the bench, not hang it.
  const budget = setTimeout(
    () => notServed(new Error(`group ${group} was not served within ${SERVED_BUDGET_MS} ms of the restart`)),
    SERVED_BUDGET_MS,
  );
  await received.finally(() => clearTimeout(budget));
  const pushServedMs = performance.now() - spawnedAt;
  await consumer.close();
  return [restarted, { listeningMs, healthyMs, pushServedMs, listeningCpuMs }];
}
