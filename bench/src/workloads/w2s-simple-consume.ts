import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import { SimpleConsumer } from '@ricochet/simple-consumer';
import { putGroup } from '../admin.js';
import type { RicochetRunOptions } from '../measured-window.js';
import { rate, runPool } from '../pool.js';
import { startBrokerProcess, startReferenceProcess } from '../processes.js';
import { ReferenceClient } from '../reference-client.js';

export const W2S_MESSAGES = 100_000;
const RECEIVERS = 8;
const BATCH = 32;
const BODY = randomBytes(256);

/**
 * W2s: receive + ack of 100,000 pre-published messages with the simple consumer: 8 receive loops,
 * each taking up to 32 messages and acking every one (acks awaited) before receiving again.
 */
export async function runW2s(): Promise<{ ricochet: number; reference: number }> {
  const ricochet = await ricochetW2s();
  let reference: number;
  {
    await using server = await startReferenceProcess();
    await using client = await ReferenceClient.connect(server.url);
    await runPool(W2S_MESSAGES, 1_000, async () => void (await client.request({ t: 'send', body: BODY })));
    let acked = 0;
    const startedAt = performance.now();
    await runPool(RECEIVERS, RECEIVERS, async () => {
      for (let guard = 0; guard < W2S_MESSAGES && acked < W2S_MESSAGES; guard++) {
        const answer = await client.request({ t: 'receive', max: BATCH });
        const messages = answer.messages ?? [];
        if (messages.length === 0) break;
        await Promise.all(messages.map((message) => client.request({ t: 'ack', offset: message.offset })));
        acked += messages.length;
      }
    });
    reference = rate(acked, startedAt);
  }
  return { ricochet, reference };
}

/** Ricochet's half of W2s, on a fresh broker; `options` for `pnpm bench:profile`. */
export async function ricochetW2s(options: RicochetRunOptions = {}): Promise<number> {
  {
    await using broker = await startBrokerProcess([], {
      eventLoopProbe: options.window !== undefined,
      profile: options.profile,
    });
    await putGroup(broker.endpoint, 'w2s', { startFrom: 'earliest' });
    const producer = new Producer({ endpoint: broker.endpoint });
    await runPool(W2S_MESSAGES, 1_000, async () => void (await producer.send({ topic: 'w2s', body: BODY })));
    await producer.close();
    const consumer = new SimpleConsumer({
      endpoint: broker.endpoint,
      group: 'w2s',
      subscriptions: { w2s: '*' },
      awaitDurationMs: 0,
    });
    await consumer.start();
    let acked = 0;
    await options.window?.begin(broker);
    const startedAt = performance.now();
    await runPool(RECEIVERS, RECEIVERS, async () => {
      for (let guard = 0; guard < W2S_MESSAGES && acked < W2S_MESSAGES; guard++) {
        const messages = await consumer.receive(BATCH, 60_000);
        if (messages.length === 0) break;
        await Promise.all(messages.map((message) => consumer.ack(message)));
        acked += messages.length;
      }
    });
    const ricochet = rate(acked, startedAt);
    await options.window?.end(broker);
    if (acked !== W2S_MESSAGES) throw new Error(`W2s acked ${acked} of ${W2S_MESSAGES}`);
    await consumer.close();
    return ricochet;
  }
}
