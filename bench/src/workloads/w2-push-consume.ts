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
/**
 * Before the measured drain, every system publishes and drains this many on a topic (stream,
 * queue) of its own, unmeasured, as W1 warms up its sends: a Node server is still compiling its
 * consume path through its first tens of thousands of deliveries (our broker drained 111–115k
 * msg/s from a fresh start, and 138–156k after a round of 20,000, one run of three each).
 */
export const W2_WARM_UP_MESSAGES = 20_000;
const WARM_UP_TOPIC = 'w2-warm-up';
const CACHED = 1_000;
const BODY = randomBytes(256);

/**
 * W2 push consume: 100,000 pre-published messages, each acked, 1,000 cached, after a warm-up round
 * ({@link W2_WARM_UP_MESSAGES}). The clock runs from subscribing until the last message was
 * processed; the broker's committed count is checked after. Ricochet is measured over each
 * transport (publish and consume alike), each on a fresh broker.
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
    const endpoint = broker.endpointFor(transport);
    await warmUpW2(broker, endpoint);
    await putGroup(broker.endpoint, 'w2', { startFrom: 'earliest' });
    const producer = new Producer({ endpoint });
    await runPool(W2_MESSAGES, 1_000, async () => void (await producer.send({ topic: 'w2', body: BODY })));
    await producer.close();
    // Awaited here, inside the block: `await using` stops the broker when the block is left.
    return await drainW2(broker, endpoint, {
      group: 'w2',
      topic: 'w2',
      messages: W2_MESSAGES,
      window: options.window,
    });
  }
}

/**
 * W2's warm-up round on `broker` (W2c10's too): {@link W2_WARM_UP_MESSAGES} published through
 * `endpoint` to a topic of their own and drained there by one push consumer, unmeasured.
 */
export async function warmUpW2(
  broker: BenchProcess & { readonly endpoint: string },
  endpoint: string,
): Promise<void> {
  await putGroup(broker.endpoint, WARM_UP_TOPIC, { startFrom: 'earliest' });
  const producer = new Producer({ endpoint });
  await runPool(W2_WARM_UP_MESSAGES, 1_000, async () => {
    await producer.send({ topic: WARM_UP_TOPIC, body: BODY });
  });
  await producer.close();
  await drainW2(broker, endpoint, {
    group: WARM_UP_TOPIC,
    topic: WARM_UP_TOPIC,
    messages: W2_WARM_UP_MESSAGES,
  });
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
    await using producer = await ReferenceClient.connect(server.url);
    await warmUpReferenceW2(server.url, producer);
    await runPool(W2_MESSAGES, 1_000, async () => void (await producer.request({ t: 'send', body: BODY })));
    await using consumer = await ReferenceClient.connect(server.url);
    // Awaited here, inside the block: `await using` stops the server when the block is left.
    return await drainReference(consumer, W2_MESSAGES);
  }
}

/**
 * The reference's warm-up round (W2's and W2c10's): {@link W2_WARM_UP_MESSAGES} sent through
 * `publisher`, then drained by a consumer of their own. The reference has one log: that consumer
 * leaves holding no credit, so that nothing published after is pushed to it while it closes.
 */
export async function warmUpReferenceW2(url: string, publisher: ReferenceClient): Promise<void> {
  await runPool(W2_WARM_UP_MESSAGES, 1_000, async () => {
    await publisher.request({ t: 'send', body: BODY });
  });
  await using consumer = await ReferenceClient.connect(url);
  await drainReference(consumer, W2_WARM_UP_MESSAGES, { leaveWithoutCredit: true });
}

/**
 * Subscribe `client` with W2's credit and ack each delivery until `messages` arrived; their rate.
 * `leaveWithoutCredit` leaves the last credit's worth unacked, so the server holds none for it.
 */
async function drainReference(
  client: ReferenceClient,
  messages: number,
  { leaveWithoutCredit = false }: { leaveWithoutCredit?: boolean } = {},
): Promise<number> {
  const processed = countdown(messages);
  const acked = leaveWithoutCredit ? messages - CACHED : messages;
  let delivered = 0;
  client.onDeliver = (offset) => {
    processed.tick();
    if (++delivered <= acked) client.oneWay({ t: 'pushAck', offset });
  };
  const startedAt = performance.now();
  client.oneWay({ t: 'subscribe', credit: CACHED });
  await processed.done;
  return rate(messages, startedAt);
}
