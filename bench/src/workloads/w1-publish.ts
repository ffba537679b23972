import { randomBytes } from 'node:crypto';
import { Producer } from '@ricochet/producer';
import {
  type MeasuredWindow,
  type RicochetRunOptions,
  startThroughput,
  type Throughput,
} from '../measured-window.js';
import { rate, runPool } from '../pool.js';
import {
  BENCH_TRANSPORTS,
  type BenchProcess,
  type BenchTransport,
  startBrokerProcess,
  startReferenceProcess,
} from '../processes.js';
import { ReferenceClient } from '../reference-client.js';

export const W1_MESSAGES = 100_000;
/** Over HTTP each send is a POST: fewer messages keep the run short; the rate is what counts. */
export const W1_HTTP_MESSAGES = 20_000;
const IN_FLIGHT = 1_000;
/** The topic W1's measured sends go to (W2 of `pnpm bench --scaling` drains it). */
export const W1_TOPIC = 'w1';
const BODY = randomBytes(256);
const WARM_UP = 5_000;

/**
 * W1 publish: 100,000 messages of 256 bytes, up to 1,000 sends in flight, each awaited. Every
 * Ricochet send is acknowledged only after the commit holding it was fsynced. Ricochet is measured
 * over each transport, each on a fresh broker.
 */
export async function runW1(): Promise<{
  ricochet: Record<BenchTransport, Throughput>;
  http: Throughput;
  reference: number;
}> {
  const ricochet: Partial<Record<BenchTransport, Throughput>> = {};
  for (const transport of BENCH_TRANSPORTS) ricochet[transport] = await ricochetW1(transport);
  const http = await ricochetW1('http', W1_HTTP_MESSAGES);
  return { ricochet: ricochet as Record<BenchTransport, Throughput>, http, reference: await referenceW1() };
}

/**
 * One transport's W1 on a fresh broker (profiled over the measured sends when `options` say so). `http` is the HTTP transport on the main port: the same
 * producer, each send one `POST /v1/frames` (fetch keeps its connections alive).
 */
export async function ricochetW1(
  transport: BenchTransport | 'http',
  messages = W1_MESSAGES,
  options: RicochetRunOptions = {},
): Promise<Throughput> {
  {
    await using broker = await startBrokerProcess([], {
      eventLoopProbe: options.window !== undefined,
      profile: options.profile,
    });
    const endpoint =
      transport === 'http' ? broker.endpointFor('ws').replace(/^ws/, 'http') : broker.endpointFor(transport);
    // Awaited here, inside the block: `await using` stops the broker when the block is left.
    return await publishW1(broker, endpoint, { messages, window: options.window });
  }
}

/**
 * W1's client against brokers already running (`broker`, with its spread peers): one producer
 * given `endpoint` (one, or every broker's as an operator would list them), a warm-up, then
 * `messages` sends of 256 bytes to `topic` (W1's by default), up to `inFlight` at once, each
 * awaited, over `window`: their rate and what each cost the brokers' CPU and this process's.
 */
export async function publishW1(
  broker: BenchProcess,
  endpoint: string | readonly string[],
  {
    messages = W1_MESSAGES,
    inFlight = IN_FLIGHT,
    topic = W1_TOPIC,
    window,
  }: { messages?: number; inFlight?: number; topic?: string; window?: MeasuredWindow | undefined } = {},
): Promise<Throughput> {
  const producer = new Producer({ endpoint });
  await producer.start();
  await runPool(WARM_UP, inFlight, async () => void (await producer.send({ topic: 'warm-up', body: BODY })));
  await window?.begin(broker);
  const measured = startThroughput(broker);
  await runPool(messages, inFlight, async () => void (await producer.send({ topic, body: BODY })));
  const ricochet = measured.stop(messages);
  await window?.end(broker);
  await producer.close();
  return ricochet;
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
