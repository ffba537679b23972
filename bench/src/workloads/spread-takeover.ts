import type { QueueRoute } from '@ricochet/broker';
import { Producer } from '@ricochet/producer';
import { storeArgs } from '../bench-store.js';
import { startBrokerProcess } from '../processes.js';
import { waitUntilSpread } from '../spread-cluster.js';
import { TAKEOVER_LEASE_MS } from './takeover.js';

/** What one takeover of a spread store measured, in ms (beside `TakeoverFigures` of active/standby). */
export interface SpreadTakeoverFigures {
  /** `kill -9` of one broker → the other owns every queue, as its `GET /v1/cluster` shows. */
  readonly afterKillMs: number;
  /** `kill -9` of one broker → the first send to a queue it owned is acknowledged through the other. */
  readonly firstSendAfterKillMs: number;
  /** SIGTERM of one broker (drain, leases given back) → the other owns every queue. */
  readonly afterStopMs: number;
}

const BUDGET_MS = 60_000;
const POLL_MS = 10;

/**
 * The takeover workload with the store's queues spread (`pnpm bench --store postgres
 * --store-queues N --store-spread 2 takeover`, issue 31 item 4): two brokers share the queues, a
 * producer on one sends 1,000 messages, then the other is killed with -9 (one that owns a queue:
 * with few queues, rendezvous hashing may give one broker all of them), and the time
 * until the survivor owns every queue and until a send to a queue the dead broker owned is
 * acknowledged (a receipt's offset names its queue, `offset × N + queue`); then
 * a third broker joins, takes its share, and is stopped cleanly.
 */
export async function runSpreadTakeover(): Promise<SpreadTakeoverFigures> {
  const store = [...(await storeArgs()), '--store-lease-ms', String(TAKEOVER_LEASE_MS)];
  // `--store` among the arguments: each call starts one broker, not a spread cluster of its own.
  await using first = await startBrokerProcess(store);
  await using second = await startBrokerProcess(store);
  await waitUntilSpread([first.endpoint, second.endpoint]);
  const owned = async (broker: typeof first) =>
    new Set((await routesOf(broker.endpoint)).filter((r) => r.to === 'here').map((r) => r.queue));
  // Rendezvous hashing may give one broker every queue: the broker killed is one that owns some.
  const firstOwns = await owned(first);
  const [victim, survivor] = firstOwns.size > 0 ? [first, second] : [second, first];
  const lost = firstOwns.size > 0 ? firstOwns : await owned(second);
  const queues = (await routesOf(survivor.endpoint)).length;
  const producer = new Producer({ endpoint: survivor.endpoint });
  try {
    await producer.start();
    for (let i = 0; i < 1_000; i++) await producer.send({ topic: 'takeover', body: `m${i}` });
    const killedAt = performance.now();
    const ownsAll = ownsEveryQueue(survivor.endpoint, queues);
    victim.child.kill('SIGKILL');
    let firstSendAt: number | undefined;
    // Bounded in time: a send fails within its request timeout, and the budget ends the loop.
    while (firstSendAt === undefined && performance.now() - killedAt < BUDGET_MS) {
      try {
        // Each send goes to the queue of its (new) id: half of them to the survivor's own queue.
        const sent = await producer.send({ topic: 'takeover', body: 'after the kill' });
        if (lost.has(sent.offset % queues)) firstSendAt = performance.now();
      } catch {
        // Not yet: the survivor waits for the dead broker's leases to run out.
      }
    }
    const afterKillMs = (await ownsAll) - killedAt;
    if (firstSendAt === undefined)
      throw new Error(`no send was acknowledged within ${BUDGET_MS} ms of the kill`);
    await using joiner = await startBrokerProcess(store);
    await waitUntilSpread([survivor.endpoint, joiner.endpoint]);
    const stoppedAt = performance.now();
    const ownsAllAgain = ownsEveryQueue(survivor.endpoint, queues);
    await joiner.stop();
    return {
      afterKillMs,
      firstSendAfterKillMs: firstSendAt - killedAt,
      afterStopMs: (await ownsAllAgain) - stoppedAt,
    };
  } finally {
    await producer.close();
  }
}

/** When (`performance.now()`) the broker at `endpoint` routes all `queues` here. */
async function ownsEveryQueue(endpoint: string, queues: number): Promise<number> {
  const deadline = performance.now() + BUDGET_MS;
  while (performance.now() < deadline) {
    const routes = await routesOf(endpoint).catch(() => []);
    if (routes.length === queues && routes.every((route) => route.to === 'here')) return performance.now();
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  throw new Error(`${endpoint} did not own all ${queues} queues within ${BUDGET_MS} ms`);
}

async function routesOf(endpoint: string): Promise<QueueRoute[]> {
  const response = await fetch(`${endpoint.replace(/^ws/, 'http')}/v1/cluster`);
  if (!response.ok) return [];
  return ((await response.json()) as { routes?: QueueRoute[] }).routes ?? [];
}
