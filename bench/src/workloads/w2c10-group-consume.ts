import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { groupStats, putGroup } from '../admin.js';
import type { RicochetRunOptions } from '../measured-window.js';
import { countdown, rate, runPool } from '../pool.js';
import { startBrokerProcess, startReferenceProcess } from '../processes.js';
import { ReferenceClient } from '../reference-client.js';
import { type Fairness, fairnessOf } from '../report/fairness.js';
import { W2_MESSAGES, warmUpReferenceW2, warmUpW2 } from './w2-push-consume.js';

/** W2c10's consumers, all in one group, each on its own connection. */
export const W2C10_CONSUMERS = 10;
/**
 * Each consumer's cache: W2's 1,000 split ten ways, so that the group holds as many deliveries at
 * once as W2's one consumer does and the rate beside W2's shows the cost of more consumers, not of
 * a window ten times as large. The peers get the same split (prefetch, pull buffer).
 */
export const W2C10_CACHED_EACH = 100;
const BODY = randomBytes(256);

/** One run's rate (msg/s) and how evenly the consumers shared the messages. */
export type GroupConsumeFigures = { readonly rate: number } & Fairness;

/**
 * W2c10 push consume by a group of 10: W2's 100,000 pre-published messages, consumed and acked by
 * ten push consumers of one group, each on its own connection with 100 cached, after W2's warm-up
 * round. The clock runs from
 * starting the consumers until the last message was processed; each consumer's count gives the
 * fairness, the broker's committed count is checked after. Over WebSocket only (W2 has the TCP row).
 */
export async function runW2c10(): Promise<{ ricochet: GroupConsumeFigures; reference: GroupConsumeFigures }> {
  return { ricochet: await ricochetW2c10(), reference: await referenceW2c10() };
}

/** Ricochet's half of W2c10 on a fresh broker; `options` for `pnpm bench:profile`. */
export async function ricochetW2c10(options: RicochetRunOptions = {}): Promise<GroupConsumeFigures> {
  await using broker = await startBrokerProcess([], {
    eventLoopProbe: options.window !== undefined,
    profile: options.profile,
  });
  await warmUpW2(broker, broker.endpoint);
  await putGroup(broker.endpoint, 'w2c10', { startFrom: 'earliest' });
  const producer = new Producer({ endpoint: broker.endpoint });
  await runPool(W2_MESSAGES, 1_000, async () => void (await producer.send({ topic: 'w2c10', body: BODY })));
  await producer.close();
  const processed = countdown(W2_MESSAGES);
  const perConsumer = new Array<number>(W2C10_CONSUMERS).fill(0);
  const consumers = perConsumer.map(
    (_, index) =>
      new PushConsumer({
        endpoint: broker.endpoint,
        group: 'w2c10',
        subscriptions: { w2c10: '*' },
        maxCachedMessages: W2C10_CACHED_EACH,
        listener: () => {
          perConsumer[index] = (perConsumer[index] ?? 0) + 1;
          processed.tick();
          return ConsumeResult.SUCCESS;
        },
      }),
  );
  let figures: GroupConsumeFigures;
  try {
    await options.window?.begin(broker);
    const startedAt = performance.now();
    await Promise.all(consumers.map((consumer) => consumer.start()));
    await processed.done;
    figures = { rate: rate(W2_MESSAGES, startedAt), ...fairnessOf(perConsumer) };
    await options.window?.end(broker);
  } finally {
    // Closing sends each consumer's last results, as W2's close does, before the count below.
    await Promise.all(consumers.map((consumer) => consumer.close()));
  }
  const stats = await groupStats(broker.endpoint, 'w2c10');
  if (stats.committed !== W2_MESSAGES)
    throw new Error(`W2c10 committed ${stats.committed} of ${W2_MESSAGES}`);
  return figures;
}

/**
 * The reference's W2c10: ten clients subscribe to its one log, each with 100 credit; the server
 * hands each new message to whichever subscriber has credit (the first in its set when several do).
 */
async function referenceW2c10(): Promise<GroupConsumeFigures> {
  await using server = await startReferenceProcess();
  const clients: ReferenceClient[] = [];
  try {
    for (let i = 0; i < W2C10_CONSUMERS; i++) clients.push(await ReferenceClient.connect(server.url));
    const [publisher] = clients;
    if (publisher === undefined) throw new Error('W2c10 reference: no client');
    await warmUpReferenceW2(server.url, publisher);
    await runPool(W2_MESSAGES, 1_000, async () => void (await publisher.request({ t: 'send', body: BODY })));
    const processed = countdown(W2_MESSAGES);
    const perConsumer = clients.map(() => 0);
    clients.forEach((client, index) => {
      client.onDeliver = (offset) => {
        perConsumer[index] = (perConsumer[index] ?? 0) + 1;
        processed.tick();
        client.oneWay({ t: 'pushAck', offset });
      };
    });
    const startedAt = performance.now();
    for (const client of clients) client.oneWay({ t: 'subscribe', credit: W2C10_CACHED_EACH });
    await processed.done;
    return { rate: rate(W2_MESSAGES, startedAt), ...fairnessOf(perConsumer) };
  } finally {
    await Promise.all(clients.map((client) => client[Symbol.asyncDispose]()));
  }
}
