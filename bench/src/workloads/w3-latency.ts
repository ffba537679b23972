import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { putGroup } from '../admin.js';
import { percentile } from '../pool.js';
import {
  BENCH_TRANSPORTS,
  type BenchTransport,
  startBrokerProcess,
  startReferenceProcess,
} from '../processes.js';
import { ReferenceClient } from '../reference-client.js';

const RATE_PER_SECOND = 2_000;
const DURATION_MS = 10_000;
const TICK_MS = 5;
const PER_TICK = (RATE_PER_SECOND * TICK_MS) / 1_000;
export const W3_MESSAGES = (RATE_PER_SECOND * DURATION_MS) / 1_000;

export interface LatencySummary {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** The send time travels in the body: both ends are this process, so one clock measures it. */
function stampedBody(): Uint8Array {
  const body = new Uint8Array(256);
  new DataView(body.buffer).setFloat64(0, performance.now());
  return body;
}

function sentAt(body: Uint8Array): number {
  return new DataView(body.buffer, body.byteOffset, body.byteLength).getFloat64(0);
}

function summarize(latenciesMs: number[]): LatencySummary {
  return {
    p50Ms: percentile(latenciesMs, 50),
    p99Ms: percentile(latenciesMs, 99),
    maxMs: Math.max(...latenciesMs),
  };
}

/** Send `PER_TICK` messages every `TICK_MS` until `W3_MESSAGES` were sent; resolve when all arrived. */
async function paced(send: () => void, arrived: Promise<void>): Promise<void> {
  let sent = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      for (let i = 0; i < PER_TICK && sent < W3_MESSAGES; i++, sent++) send();
      if (sent >= W3_MESSAGES) {
        clearInterval(timer);
        resolve();
      }
    }, TICK_MS);
  });
  await arrived;
}

/**
 * W3 latency: 2,000 msg/s for 10 s, publish-to-listener (push consumer), against the broker and
 * against the reference relaying each message from one connection to another. Ricochet is measured
 * over each transport, each on a fresh broker.
 */
export async function runW3(): Promise<{
  ricochet: Record<BenchTransport, LatencySummary>;
  reference: LatencySummary;
}> {
  const ricochet: Partial<Record<BenchTransport, LatencySummary>> = {};
  for (const transport of BENCH_TRANSPORTS) ricochet[transport] = await ricochetW3(transport);
  return { ricochet: ricochet as Record<BenchTransport, LatencySummary>, reference: await referenceW3() };
}

async function ricochetW3(transport: BenchTransport): Promise<LatencySummary> {
  {
    await using broker = await startBrokerProcess();
    await putGroup(broker.endpoint, 'w3', { startFrom: 'earliest' });
    const latencies: number[] = [];
    let allArrived: () => void = () => {};
    const arrived = new Promise<void>((resolve) => (allArrived = resolve));
    const consumer = new PushConsumer({
      endpoint: broker.endpointFor(transport),
      group: 'w3',
      subscriptions: { w3: '*' },
      listener: (message) => {
        latencies.push(performance.now() - sentAt(message.body));
        if (latencies.length === W3_MESSAGES) allArrived();
        return ConsumeResult.SUCCESS;
      },
    });
    await consumer.start();
    const producer = new Producer({ endpoint: broker.endpointFor(transport) });
    await producer.start();
    await paced(() => void producer.send({ topic: 'w3', body: stampedBody() }), arrived);
    const ricochet = summarize(latencies);
    await producer.close();
    await consumer.close();
    return ricochet;
  }
}

async function referenceW3(): Promise<LatencySummary> {
  {
    await using server = await startReferenceProcess();
    await using consumer = await ReferenceClient.connect(server.url);
    await using producer = await ReferenceClient.connect(server.url);
    const latencies: number[] = [];
    let allArrived: () => void = () => {};
    const arrived = new Promise<void>((resolve) => (allArrived = resolve));
    consumer.onDeliver = (offset, body) => {
      latencies.push(performance.now() - sentAt(body));
      consumer.oneWay({ t: 'pushAck', offset });
      if (latencies.length === W3_MESSAGES) allArrived();
    };
    consumer.oneWay({ t: 'subscribe', credit: 1_024 });
    await paced(() => void producer.request({ t: 'send', body: stampedBody() }), arrived);
    return summarize(latencies);
  }
}
