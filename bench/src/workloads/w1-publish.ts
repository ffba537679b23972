import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import { rate, runPool } from '../pool.js';
import { startBrokerProcess, startReferenceProcess } from '../processes.js';
import { ReferenceClient } from '../reference-client.js';

export const W1_MESSAGES = 100_000;
const IN_FLIGHT = 1_000;
const BODY = randomBytes(256);
const WARM_UP = 5_000;

/**
 * W1 publish: 100,000 messages of 256 bytes, up to 1,000 sends in flight, each awaited. Every
 * Ricochet send is acknowledged only after the commit holding it was fsynced.
 */
export async function runW1(): Promise<{ ricochet: number; reference: number }> {
  let ricochet: number;
  {
    await using broker = await startBrokerProcess();
    const producer = new Producer({ endpoint: broker.endpoint });
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
    ricochet = rate(W1_MESSAGES, startedAt);
    await producer.close();
  }
  let reference: number;
  {
    await using server = await startReferenceProcess();
    await using client = await ReferenceClient.connect(server.url);
    await runPool(WARM_UP, IN_FLIGHT, async () => void (await client.request({ t: 'send', body: BODY })));
    const startedAt = performance.now();
    await runPool(W1_MESSAGES, IN_FLIGHT, async () => void (await client.request({ t: 'send', body: BODY })));
    reference = rate(W1_MESSAGES, startedAt);
  }
  return { ricochet, reference };
}
