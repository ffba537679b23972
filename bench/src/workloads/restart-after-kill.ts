import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { putGroup } from '../admin.js';
import { type KillableBroker, startKillableBroker } from '../processes.js';

/** The topic whose stored message tells that a restarted broker serves: see {@link restartAfterKill}. */
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

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Store the message every {@link restartAfterKill} of this broker's data directory waits for. */
export async function storeStartupMessage(endpoint: string): Promise<void> {
  const producer = new Producer({ endpoint });
  await producer.send({ topic: STARTUP_TOPIC, body: 'served after a restart' });
  await producer.close();
}

/**
 * SIGKILL the broker and start it again on the same data directory and port; time it until a
 * new push group (created before the kill) receives the message {@link storeStartupMessage} stored.
 */
export async function restartAfterKill(
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
