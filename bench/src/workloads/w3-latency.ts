import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { putGroup } from '../admin.js';
import { percentile } from '../pool.js';
import {
  BENCH_TRANSPORTS,
  type BenchTransport,
  brokerEventLoopDelay,
  type EventLoopDelay,
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
export function stampedBody(): Uint8Array {
  const body = new Uint8Array(256);
  new DataView(body.buffer).setFloat64(0, performance.now());
  return body;
}

export function sentAt(body: Uint8Array): number {
  return new DataView(body.buffer, body.byteOffset, body.byteLength).getFloat64(0);
}

export function summarize(latenciesMs: number[]): LatencySummary {
  return {
    p50Ms: percentile(latenciesMs, 50),
    p99Ms: percentile(latenciesMs, 99),
    maxMs: Math.max(...latenciesMs),
  };
}

/** Send `PER_TICK` messages every `TICK_MS` until `W3_MESSAGES` were sent; resolve when all arrived. */
export async function paced(send: () => void, arrived: Promise<void>): Promise<void> {
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
 * over each transport, each on a fresh broker, with the broker's event-loop delay over the paced span.
 */
export async function runW3(): Promise<{
  ricochet: Record<BenchTransport, LatencySummary>;
  brokerEventLoop: Record<BenchTransport, EventLoopDelay>;
  reference: LatencySummary;
}> {
  const ricochet: Partial<Record<BenchTransport, LatencySummary>> = {};
  const brokerEventLoop: Partial<Record<BenchTransport, EventLoopDelay>> = {};
  for (const transport of BENCH_TRANSPORTS) {
    const measured = await ricochetW3(transport);
    ricochet[transport] = measured.latency;
    brokerEventLoop[transport] = measured.eventLoop;
  }
  return {
    ricochet: ricochet as Record<BenchTransport, LatencySummary>,
    brokerEventLoop: brokerEventLoop as Record<BenchTransport, EventLoopDelay>,
    reference: await referenceW3(),
  };
}

async function ricochetW3(
  transport: BenchTransport,
): Promise<{ latency: LatencySummary; eventLoop: EventLoopDelay }> {
  {
    await using broker = await startBrokerProcess([], { eventLoopProbe: true });
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
    await brokerEventLoopDelay(broker);
    await paced(() => void producer.send({ topic: 'w3', body: stampedBody() }), arrived);
    const eventLoop = await brokerEventLoopDelay(broker);
    const latency = summarize(latencies);
    await producer.close();
    await consumer.close();
    return { latency, eventLoop };
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
