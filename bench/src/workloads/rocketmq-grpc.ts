import { randomBytes } from 'node:crypto';
import { Producer as RicochetProducer } from '@ricochet/producer';
import { type ILogger, Producer, SimpleConsumer } from 'rocketmq-client-nodejs';
import { putGroup } from '../admin.js';
import type { RicochetRunOptions } from '../measured-window.js';
import { rate, runPool } from '../pool.js';
import { startBrokerProcess } from '../processes.js';

/**
 * W1 and W2s through Ricochet's RocketMQ 5 endpoint (`--grpc-port`) with Apache's official Node.js
 * client, unchanged: the same client patterns as W1 and W2s with Ricochet's own clients, on a fresh
 * broker each, so the two rows read side by side. Fewer messages than W1's 100,000: the official
 * client sends one gRPC call per message, and the rate is what counts.
 */
export const ROCKETMQ_MESSAGES = 20_000;
const IN_FLIGHT = 1_000;
const WARM_UP = 2_000;
const RECEIVERS = 8;
const BATCH = 32;
const BODY = randomBytes(256);

/** The official client logs to ~/logs/rocketmq unless given a logger: nothing, here. */
const silent: ILogger = { info() {}, warn() {}, error() {}, debug() {} };

/** A broker with the RocketMQ endpoint; `options` for `pnpm bench:profile`. */
function startGrpcBroker(options: RicochetRunOptions) {
  return startBrokerProcess(['--grpc-port', '0'], {
    eventLoopProbe: options.window !== undefined,
    profile: options.profile,
  });
}

/** W1 with the official producer: up to 1,000 sends in flight, each awaited (acked after fsync). */
export async function rocketMqW1(options: RicochetRunOptions = {}): Promise<number> {
  await using broker = await startGrpcBroker(options);
  const endpoints = broker.grpcEndpoint;
  const producer = new Producer({ endpoints, namespace: '', topics: ['w1'], logger: silent });
  await producer.startup();
  const send = async () => void (await producer.send({ topic: 'w1', body: BODY }));
  try {
    await runPool(WARM_UP, IN_FLIGHT, send);
    await options.window?.begin(broker);
    const startedAt = performance.now();
    await runPool(ROCKETMQ_MESSAGES, IN_FLIGHT, send);
    const result = rate(ROCKETMQ_MESSAGES, startedAt);
    await options.window?.end(broker);
    return result;
  } finally {
    await producer.shutdown();
  }
}

/**
 * W2s with the official simple consumer: messages pre-published with Ricochet's producer, then 8
 * receive loops of up to 32 messages, each acked (awaited) before the next receive.
 */
export async function rocketMqW2s(options: RicochetRunOptions = {}): Promise<number> {
  await using broker = await startGrpcBroker(options);
  await putGroup(broker.endpoint, 'w2s', { startFrom: 'earliest' });
  const producer = new RicochetProducer({ endpoint: broker.endpoint });
  await runPool(
    ROCKETMQ_MESSAGES,
    IN_FLIGHT,
    async () => void (await producer.send({ topic: 'w2s', body: BODY })),
  );
  await producer.close();
  const consumer = new SimpleConsumer({
    endpoints: broker.grpcEndpoint,
    namespace: '',
    consumerGroup: 'w2s',
    subscriptions: new Map([['w2s', '*']]),
    awaitDuration: 0,
    logger: silent,
  });
  await consumer.startup();
  try {
    let acked = 0;
    await options.window?.begin(broker);
    const startedAt = performance.now();
    await runPool(RECEIVERS, RECEIVERS, async () => {
      for (let guard = 0; guard < ROCKETMQ_MESSAGES && acked < ROCKETMQ_MESSAGES; guard++) {
        const messages = await consumer.receive(BATCH, 60_000);
        if (messages.length === 0) break;
        await Promise.all(messages.map((message) => consumer.ack(message)));
        acked += messages.length;
      }
    });
    const result = rate(acked, startedAt);
    await options.window?.end(broker);
    if (acked !== ROCKETMQ_MESSAGES) throw new Error(`W2s over gRPC acked ${acked} of ${ROCKETMQ_MESSAGES}`);
    return result;
  } finally {
    await consumer.shutdown();
  }
}
