import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import { rate, runPool } from '../pool.js';
import {
  BENCH_TRANSPORTS,
  type BenchTransport,
  startBrokerProcess,
  startReferenceProcess,
} from '../processes.js';
import { ReferenceClient } from '../reference-client.js';

export const W1_MESSAGES = 100_000;
const IN_FLIGHT = 1_000;
const BODY = randomBytes(256);
const WARM_UP = 5_000;

/**
 * W1 publish: 100,000 messages of 256 bytes, up to 1,000 sends in flight, each awaited. Every
 * Ricochet send is acknowledged only after the commit holding it was fsynced. Ricochet is measured
 * over each transport, each on a fresh broker.
 */
export async function runW1(): Promise<{ ricochet: Record<BenchTransport, number>; reference: number }> {
  const ricochet = { ws: 0, tcp: 0 };
  for (const transport of BENCH_TRANSPORTS) ricochet[transport] = await ricochetW1(transport);
  return { ricochet, reference: await referenceW1() };
}

async function ricochetW1(transport: BenchTransport): Promise<number> {
  {
    await using broker = await startBrokerProcess();
    const producer = new Producer({ endpoint: broker.endpointFor(transport) });
    await producer.start();
    await runPool(
      WARM_UP,
      IN_FLIGHT,
      async () => void (await producer.send({ topic: 'warm-up', body: BODY })),
    );
    const startedAt = performance.now();
    await runPool(
      W1_MESSAGES,
      IN_FLIGHT,
      async () => void (await producer.send({ topic: 'w1', body: BODY })),
    );
    const ricochet = rate(W1_MESSAGES, startedAt);
    await producer.close();
    return ricochet;
  }
}

async function referenceW1(): Promise<number> {
  {
    await using server = await startReferenceProcess();
    await using client = await ReferenceClient.connect(server.url);
    await runPool(WARM_UP, IN_FLIGHT, async () => void (await client.request({ t: 'send', body: BODY })));
    const startedAt = performance.now();
    await runPool(W1_MESSAGES, IN_FLIGHT, async () => void (await client.request({ t: 'send', body: BODY })));
    return rate(W1_MESSAGES, startedAt);
  }
}
