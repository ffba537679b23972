import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import { SimpleConsumer } from '@ricochet/simple-consumer';
import { putGroup } from '../admin.js';
import { type RicochetRunOptions, startThroughput, type Throughput } from '../measured-window.js';
import { rate, runPool } from '../pool.js';
import { type BenchProcess, startBrokerProcess, startReferenceProcess } from '../processes.js';
import { ReferenceClient } from '../reference-client.js';

export const W2S_MESSAGES = 100_000;
const RECEIVERS = 8;
const BATCH = 32;
const BODY = randomBytes(256);

/**
 * W2s: receive + ack of 100,000 pre-published messages with the simple consumer: 8 receive loops,
 * each taking up to 32 messages and acking every one (acks awaited) before receiving again.
 */
export async function runW2s(): Promise<{ ricochet: Throughput; reference: number }> {
  const ricochet = await ricochetW2s();
  let reference: number;
  {
    await using server = await startReferenceProcess();
    await using client = await ReferenceClient.connect(server.url);
    await runPool(W2S_MESSAGES, 1_000, async () => void (await client.request({ t: 'send', body: BODY })));
    const startedAt = performance.now();
    const acked = await receiveAndAck(
      W2S_MESSAGES,
      async (max) => (await client.request({ t: 'receive', max })).messages ?? [],
      (message) => client.request({ t: 'ack', offset: message.offset }),
    );
    reference = rate(acked, startedAt);
  }
  return { ricochet, reference };
}

/** Ricochet's half of W2s, on a fresh broker; `options` for `pnpm bench:profile`. */
export async function ricochetW2s(options: RicochetRunOptions = {}): Promise<Throughput> {
  {
    await using broker = await startBrokerProcess([], {
      eventLoopProbe: options.window !== undefined,
      profile: options.profile,
    });
    await prepublishW2s(broker.endpoint, W2S_MESSAGES);
    const consumer = new SimpleConsumer({
      endpoint: broker.endpoint,
      group: 'w2s',
      subscriptions: { w2s: '*' },
      awaitDurationMs: 0,
    });
    await consumer.start();
    const ricochet = await measuredReceives(
      broker,
      options,
      W2S_MESSAGES,
      (max) => consumer.receive(max, 60_000),
      (message) => consumer.ack(message),
    );
    await consumer.close();
    return ricochet;
  }
}

/**
 * W2s's messages, `count` of 256 bytes on topic `w2s`, sent with Ricochet's producer to the broker
 * at `endpoint` (WebSocket), for group `w2s` reading from the earliest: what every W2s row consumes.
 */
export async function prepublishW2s(endpoint: string, count: number): Promise<void> {
  await putGroup(endpoint, 'w2s', { startFrom: 'earliest' });
  const producer = new Producer({ endpoint });
  await runPool(count, 1_000, async () => void (await producer.send({ topic: 'w2s', body: BODY })));
  await producer.close();
}

/**
 * W2s's client pattern, whatever the client: {@link RECEIVERS} loops, each receiving up to
 * {@link BATCH} messages and acking every one (acks awaited) before receiving again, until `total`
 * are acked or a receive comes back empty. Resolves with how many were acked.
 */
export async function receiveAndAck<M>(
  total: number,
  receive: (maxMessages: number) => Promise<readonly M[]>,
  ack: (message: M) => Promise<unknown>,
): Promise<number> {
  let acked = 0;
  await runPool(RECEIVERS, RECEIVERS, async () => {
    for (let guard = 0; guard < total && acked < total; guard++) {
      const messages = await receive(BATCH);
      if (messages.length === 0) break;
      await Promise.all(messages.map(ack));
      acked += messages.length;
    }
  });
  return acked;
}

/**
 * {@link receiveAndAck} of `total` messages, measured (in the profiling window, when there is one).
 * @throws Error when fewer than `total` were acked: a rate over fewer messages would flatter.
 */
export async function measuredReceives<M>(
  broker: BenchProcess,
  options: RicochetRunOptions,
  total: number,
  receive: (maxMessages: number) => Promise<readonly M[]>,
  ack: (message: M) => Promise<unknown>,
): Promise<Throughput> {
  await options.window?.begin(broker);
  const measured = startThroughput(broker);
  const acked = await receiveAndAck(total, receive, ack);
  const result = measured.stop(acked);
  await options.window?.end(broker);
  if (acked !== total) throw new Error(`W2s acked ${acked} of ${total}`);
  return result;
}
