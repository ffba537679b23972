import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { groupStats, putGroup } from '../admin.js';
import type { RicochetRunOptions } from '../measured-window.js';
import { countdown, rate, runPool } from '../pool.js';
import {
  BENCH_TRANSPORTS,
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
    const processed = countdown(W2_MESSAGES);
    const consumer = new PushConsumer({
      endpoint: broker.endpointFor(transport),
      group: 'w2',
      subscriptions: { w2: '*' },
      maxCachedMessages: CACHED,
      listener: () => {
        processed.tick();
        return ConsumeResult.SUCCESS;
      },
    });
    await options.window?.begin(broker);
    const startedAt = performance.now();
    await consumer.start();
    await processed.done;
    const ricochet = rate(W2_MESSAGES, startedAt);
    await options.window?.end(broker);
    await consumer.close();
    const stats = await groupStats(broker.endpoint, 'w2');
    if (stats.committed !== W2_MESSAGES) throw new Error(`W2 committed ${stats.committed} of ${W2_MESSAGES}`);
    return ricochet;
  }
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
