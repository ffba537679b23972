import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { groupStats, putGroup } from '../admin.js';
import type { MeasuredWindow, RicochetRunOptions } from '../measured-window.js';
import { countdown, rate, runPool } from '../pool.js';
import {
  BENCH_TRANSPORTS,
  type BenchProcess,
  type BenchTransport,
  startBrokerProcess,
  startReferenceProcess,
} from '../processes.js';
import { ReferenceClient } from '../reference-client.js';

export const W2_MESSAGES = 100_000;
const CACHED = 1_000;
const BODY = randomBytes(256);

/**
 * W2 push consume: 100,000 pre-published messages, each acked, 1,000 cached. The clock runs from
 * subscribing until the last message was processed; the broker's committed count is checked after.
 * Ricochet is measured over each transport (publish and consume alike), each on a fresh broker.
 */
export async function runW2(): Promise<{ ricochet: Record<BenchTransport, number>; reference: number }> {
  const ricochet = { ws: 0, tcp: 0 };
  for (const transport of BENCH_TRANSPORTS) ricochet[transport] = await ricochetW2(transport);
  return { ricochet, reference: await referenceW2() };
}

/** Ricochet's half of W2 over one transport, on a fresh broker; `options` for `pnpm bench:profile`. */
export async function ricochetW2(
  transport: BenchTransport,
  options: RicochetRunOptions = {},
): Promise<number> {
  {
    await using broker = await startBrokerProcess([], {
      eventLoopProbe: options.window !== undefined,
      profile: options.profile,
    });
    await putGroup(broker.endpoint, 'w2', { startFrom: 'earliest' });
    const producer = new Producer({ endpoint: broker.endpointFor(transport) });
    await runPool(W2_MESSAGES, 1_000, async () => void (await producer.send({ topic: 'w2', body: BODY })));
    await producer.close();
    // Awaited here, inside the block: `await using` stops the broker when the block is left.
    return await drainW2(broker, broker.endpointFor(transport), {
      group: 'w2',
      topic: 'w2',
      messages: W2_MESSAGES,
      window: options.window,
    });
  }
}

/**
 * W2's consumer against brokers already running (`broker`, with its spread peers) that hold
 * `messages` on `topic` for `group`: one push consumer given `endpoint` (one, or every broker's),
 * acking each; the rate from subscribing until the last was processed, over `window`. The group's
 * committed count is checked after.
 */
export async function drainW2(
  broker: BenchProcess & { readonly endpoint: string },
  endpoint: string | readonly string[],
  {
    group,
    topic,
    messages,
    window,
  }: { group: string; topic: string; messages: number; window?: MeasuredWindow | undefined },
): Promise<number> {
  const processed = countdown(messages);
  const consumer = new PushConsumer({
    endpoint,
    group,
    subscriptions: { [topic]: '*' },
    maxCachedMessages: CACHED,
    // With brokers spreading their queues, each owner delivers its own (owned subscriptions).
    routeToOwners: true,
    listener: () => {
      processed.tick();
      return ConsumeResult.SUCCESS;
    },
  });
  await window?.begin(broker);
  const startedAt = performance.now();
  await consumer.start();
  await processed.done;
  const ricochet = rate(messages, startedAt);
  await window?.end(broker);
  await consumer.close();
  const stats = await groupStats(broker.endpoint, group);
  if (stats.committed !== messages) throw new Error(`W2 committed ${stats.committed} of ${messages}`);
  return ricochet;
}

async function referenceW2(): Promise<number> {
  {
    await using server = await startReferenceProcess();
    await using client = await ReferenceClient.connect(server.url);
    await runPool(W2_MESSAGES, 1_000, async () => void (await client.request({ t: 'send', body: BODY })));
    const processed = countdown(W2_MESSAGES);
    client.onDeliver = (offset) => {
      processed.tick();
      client.oneWay({ t: 'pushAck', offset });
    };
    const startedAt = performance.now();
    client.oneWay({ t: 'subscribe', credit: CACHED });
    await processed.done;
    return rate(W2_MESSAGES, startedAt);
  }
}
