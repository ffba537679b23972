import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { putGroup } from '../admin.js';
import type { RicochetRunOptions } from '../measured-window.js';
import { countdown, percentile } from '../pool.js';
import {
  BENCH_TRANSPORTS,
  type BenchTransport,
  type BrokerLoopReading,
  brokerEventLoopDelay,
  startBrokerProcess,
  startReferenceProcess,
} from '../processes.js';
import { ReferenceClient } from '../reference-client.js';
import { openRunQueueWindow, type RunQueueReading } from '../run-queue.js';

const RATE_PER_SECOND = 2_000;
const DURATION_MS = 10_000;
const TICK_MS = 5;
const PER_TICK = (RATE_PER_SECOND * TICK_MS) / 1_000;
export const W3_MESSAGES = (RATE_PER_SECOND * DURATION_MS) / 1_000;
/**
 * Ten seconds at the same rate before the measured ten, for every system alike. A server that
 * compiles as it runs (ours and the reference are Node, whose V8 optimises a function once it has
 * run enough) is still compiling its paths through its first seconds at this rate, and W3's p99
 * then measures start-up, not the loop. Measured with a warm-up of 1 s: one broker's p99 was
 * 2.57 ms, and 1.48 ms after 5 s; three spread brokers on PostgreSQL, each seeing a third of the
 * messages, were still compiling 30 to 70 functions a second through the measured window (6 % of
 * a broker's samples in optimised code), p99 27 ms, and 4.9 ms after 10 s. The warm-up's
 * latencies are kept too, on a row of their own: how a server does in its first seconds.
 */
export const W3_WARM_UP_SECONDS = 10;
export const W3_WARM_UP_MESSAGES = W3_WARM_UP_SECONDS * RATE_PER_SECOND;
/** Where a body says whether it is one of the warm-up's (1) or a measured one (0), after its send time. */
const WARM_UP_FLAG_AT = 8;

export interface LatencySummary {
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
}

/** The send time travels in the body: both ends are this process, so one clock measures it. */
function stampedBody(sentAtMs: number, warmUp: boolean): Uint8Array {
  const body = new Uint8Array(256);
  new DataView(body.buffer).setFloat64(0, sentAtMs);
  body[WARM_UP_FLAG_AT] = warmUp ? 1 : 0;
  return body;
}

function sentAt(body: Uint8Array): number {
  return new DataView(body.buffer, body.byteOffset, body.byteLength).getFloat64(0);
}

export function summarize(latenciesMs: number[]): LatencySummary {
  return {
    p50Ms: percentile(latenciesMs, 50),
    p99Ms: percentile(latenciesMs, 99),
    maxMs: Math.max(...latenciesMs),
  };
}

/** The receiving end of W3, for any system: give it every body that arrives. */
export class LatencyRecorder {
  readonly #latenciesMs: number[] = [];
  readonly #warmUpLatenciesMs: number[] = [];
  readonly #arrivals = countdown(W3_WARM_UP_MESSAGES + W3_MESSAGES);

  /** Resolves once every message, warm-up included, has arrived. */
  get allArrived(): Promise<void> {
    return this.#arrivals.done;
  }

  arrived(body: Uint8Array): void {
    const latencyMs = performance.now() - sentAt(body);
    if (body[WARM_UP_FLAG_AT] === 1) this.#warmUpLatenciesMs.push(latencyMs);
    else this.#latenciesMs.push(latencyMs);
    this.#arrivals.tick();
  }

  summary(): LatencySummary {
    if (this.#latenciesMs.length !== W3_MESSAGES)
      throw new Error(`W3 measured ${this.#latenciesMs.length} of ${W3_MESSAGES} messages`);
    return summarize(this.#latenciesMs);
  }

  /** The warm-up's latencies: the server's first seconds at this rate. */
  warmUpSummary(): LatencySummary {
    if (this.#warmUpLatenciesMs.length !== W3_WARM_UP_MESSAGES)
      throw new Error(
        `W3 warmed up with ${this.#warmUpLatenciesMs.length} of ${W3_WARM_UP_MESSAGES} messages`,
      );
    return summarize(this.#warmUpLatenciesMs);
  }
}

/**
 * The warm-up's bodies, then the `W3_MESSAGES` measured ones (each stamped as it is sent), at
 * `PER_TICK` every `TICK_MS`; `beforeMeasuring` runs between the two. Resolves when the recorder has
 * them all.
 */
export async function paced(
  send: (body: Uint8Array) => void,
  recorder: LatencyRecorder,
  beforeMeasuring: () => Promise<unknown> = async () => {},
): Promise<void> {
  await sendPaced(W3_WARM_UP_MESSAGES, () => send(stampedBody(performance.now(), true)));
  await beforeMeasuring();
  await sendPaced(W3_MESSAGES, () => send(stampedBody(performance.now(), false)));
  await recorder.allArrived;
}

async function sendPaced(count: number, sendOne: () => void): Promise<void> {
  let sent = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      for (let i = 0; i < PER_TICK && sent < count; i++, sent++) sendOne();
      if (sent >= count) {
        clearInterval(timer);
        resolve();
      }
    }, TICK_MS);
  });
}

/**
 * W3 latency: 2,000 msg/s for 10 s, publish-to-listener (push consumer), against the broker and
 * against the reference relaying each message from one connection to another. Ricochet is measured
 * over each transport, each on a fresh broker, with the broker's event-loop delay over the paced span.
 */
export async function runW3(): Promise<{
  ricochet: Record<BenchTransport, LatencySummary>;
  /** The warm-up's latencies (over WebSocket for Ricochet): each server's first seconds at this rate. */
  warmUp: { ricochet: LatencySummary; reference: LatencySummary };
  brokerEventLoop: Record<BenchTransport, BrokerLoopReading>;
  runQueue: { ricochet: RunQueueReading; reference: RunQueueReading };
  reference: LatencySummary;
}> {
  const ricochet: Partial<Record<BenchTransport, LatencySummary>> = {};
  const brokerEventLoop: Partial<Record<BenchTransport, BrokerLoopReading>> = {};
  const runQueue: Partial<Record<BenchTransport, RunQueueReading>> = {};
  const warmUp: Partial<Record<BenchTransport, LatencySummary>> = {};
  for (const transport of BENCH_TRANSPORTS) {
    const measured = await ricochetW3(transport);
    ricochet[transport] = measured.latency;
    warmUp[transport] = measured.warmUp;
    brokerEventLoop[transport] = measured.eventLoop;
    runQueue[transport] = measured.runQueue;
  }
  const reference = await referenceW3();
  return {
    ricochet: ricochet as Record<BenchTransport, LatencySummary>,
    warmUp: { ricochet: warmUp.ws as LatencySummary, reference: reference.warmUp },
    brokerEventLoop: brokerEventLoop as Record<BenchTransport, BrokerLoopReading>,
    runQueue: { ricochet: runQueue.ws as RunQueueReading, reference: reference.runQueue },
    reference: reference.latency,
  };
}

/**
 * Ricochet's half of W3 over one transport, on a fresh broker, with the broker's event-loop delay
 * and the main threads' run-queue wait over the measured span; `options` for `pnpm bench:profile`
 * (its window opens after the warm-up).
 */
export async function ricochetW3(
  transport: BenchTransport,
  options: RicochetRunOptions = {},
): Promise<{
  latency: LatencySummary;
  warmUp: LatencySummary;
  eventLoop: BrokerLoopReading;
  runQueue: RunQueueReading;
}> {
  {
    await using broker = await startBrokerProcess([], { eventLoopProbe: true, profile: options.profile });
    await putGroup(broker.endpoint, 'w3', { startFrom: 'earliest' });
    const recorder = new LatencyRecorder();
    const consumer = new PushConsumer({
      endpoint: broker.endpointFor(transport),
      group: 'w3',
      subscriptions: { w3: '*' },
      listener: (message) => {
        recorder.arrived(message.body);
        return ConsumeResult.SUCCESS;
      },
    });
    await consumer.start();
    const producer = new Producer({ endpoint: broker.endpointFor(transport) });
    await producer.start();
    // The broker's event-loop and run-queue windows start with the measured messages, after the warm-up.
    let runQueueWindow: ReturnType<typeof openRunQueueWindow> | undefined;
    await paced(
      (body) => void producer.send({ topic: 'w3', body }),
      recorder,
      async () => {
        await brokerEventLoopDelay(broker);
        await options.window?.begin(broker);
        runQueueWindow = openRunQueueWindow(broker.child.pid);
      },
    );
    const runQueue = runQueueWindow?.end() ?? { server: undefined, client: undefined };
    await options.window?.end(broker);
    const eventLoop = await brokerEventLoopDelay(broker);
    const latency = recorder.summary();
    const warmUp = recorder.warmUpSummary();
    await producer.close();
    await consumer.close();
    return { latency, warmUp, eventLoop, runQueue };
  }
}

async function referenceW3(): Promise<{
  latency: LatencySummary;
  warmUp: LatencySummary;
  runQueue: RunQueueReading;
}> {
  {
    await using server = await startReferenceProcess();
    await using consumer = await ReferenceClient.connect(server.url);
    await using producer = await ReferenceClient.connect(server.url);
    const recorder = new LatencyRecorder();
    consumer.onDeliver = (offset, body) => {
      recorder.arrived(body);
      consumer.oneWay({ t: 'pushAck', offset });
    };
    consumer.oneWay({ t: 'subscribe', credit: 1_024 });
    let runQueueWindow: ReturnType<typeof openRunQueueWindow> | undefined;
    await paced(
      (body) => void producer.request({ t: 'send', body }),
      recorder,
      async () => {
        runQueueWindow = openRunQueueWindow(server.child.pid);
      },
    );
    const runQueue = runQueueWindow?.end() ?? { server: undefined, client: undefined };
    return { latency: recorder.summary(), warmUp: recorder.warmUpSummary(), runQueue };
  }
}
