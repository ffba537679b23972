import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { groupStats, putGroup } from '../admin.js';
import { rate, runPool } from '../pool.js';
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

/** Resolves when `count()` reaches `target`, checked by the caller after each increment. */
function countdown(target: number): { tick: () => void; done: Promise<void> } {
  let seen = 0;
  let resolve: () => void = () => {};
  const done = new Promise<void>((r) => (resolve = r));
  return {
    tick: () => {
      seen++;
      if (seen === target) resolve();
    },
    done,
  };
}

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

async function ricochetW2(transport: BenchTransport): Promise<number> {
  {
    await using broker = await startBrokerProcess();
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
    const startedAt = performance.now();
    await consumer.start();
    await processed.done;
    const ricochet = rate(W2_MESSAGES, startedAt);
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
