import { randomBytes } from 'node:crypto';
import { type ILogger, Producer, SimpleConsumer } from 'rocketmq-client-nodejs';
import { measuredSends, type RicochetRunOptions, type Throughput } from '../measured-window.js';
import { startBrokerProcess } from '../processes.js';
import { measuredReceives, prepublishW2s } from './w2s-simple-consume.js';

/**
 * W1 and W2s through Ricochet's RocketMQ 5 endpoint (`--grpc-port`) with Apache's official Node.js
 * client, unchanged: the same client patterns as W1 and W2s with Ricochet's own clients, on a fresh
 * broker each, so the two rows read side by side. Fewer messages than W1's 100,000: the official
 * client sends one gRPC call per message, and the rate is what counts.
 */
export const ROCKETMQ_MESSAGES = 20_000;
const IN_FLIGHT = 1_000;
const WARM_UP = 2_000;
const BODY = randomBytes(256);

/** The official client logs to ~/logs/rocketmq unless given a logger: nothing, here. */
const silent: ILogger = { info() {}, warn() {}, error() {}, debug() {} };

/** A broker with the RocketMQ endpoint; `options` for `pnpm bench:profile`. */
export function startGrpcBroker(options: RicochetRunOptions) {
  return startBrokerProcess(['--grpc-port', '0'], {
    eventLoopProbe: options.window !== undefined,
    profile: options.profile,
  });
}

/** W1 with the official producer: up to 1,000 sends in flight, each awaited (acked after fsync). */
export async function rocketMqW1(options: RicochetRunOptions = {}): Promise<Throughput> {
  await using broker = await startGrpcBroker(options);
  const endpoints = broker.grpcEndpoint;
  const producer = new Producer({ endpoints, namespace: '', topics: ['w1'], logger: silent });
  await producer.startup();
  const send = async () => void (await producer.send({ topic: 'w1', body: BODY }));
  try {
    return await measuredSends(
      broker,
      options,
      { warmUp: WARM_UP, messages: ROCKETMQ_MESSAGES, inFlight: IN_FLIGHT },
      send,
    );
  } finally {
    await producer.shutdown();
  }
}

/**
 * W2s with the official simple consumer: messages pre-published with Ricochet's producer, then 8
 * receive loops of up to 32 messages, each acked (awaited) before the next receive.
 */
export async function rocketMqW2s(options: RicochetRunOptions = {}): Promise<Throughput> {
  await using broker = await startGrpcBroker(options);
  await prepublishW2s(broker.endpoint, ROCKETMQ_MESSAGES);
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
    return await measuredReceives(
      broker,
      options,
      ROCKETMQ_MESSAGES,
      (max) => consumer.receive(max, 60_000),
      (message) => consumer.ack(message),
    );
  } finally {
    await consumer.shutdown();
  }
}
