import type { BrokerConfigInput } from '@ricochet/broker';
import {
  type ILogger,
  type MessageListener,
  Producer,
  PushConsumer,
  SimpleConsumer,
} from 'rocketmq-client-nodejs';
import { startBroker, type TestBroker } from './test-broker.js';

/**
 * Apache's official RocketMQ 5 Node client (`rocketmq-client-nodejs`, pinned), unchanged, against
 * a broker serving `--grpc-port`. The helpers only start and stop it: every call a test makes is
 * the client's own.
 */

/** A broker with its RocketMQ endpoint on a free port, and the `host:port` the clients take. */
export interface RocketBroker extends AsyncDisposable {
  readonly broker: TestBroker;
  /** `127.0.0.1:<grpcPort>`: the access point, as a RocketMQ client is configured with one. */
  readonly endpoints: string;
}

export async function startRocketBroker(config: BrokerConfigInput = {}): Promise<RocketBroker> {
  // Short polls: a push consumer's shutdown waits for its polls to end.
  const broker = await startBroker({ grpcLongPollingTimeoutMs: 1_000, ...config, grpcPort: 0 });
  const port = broker.broker.address?.grpcPort;
  if (port === undefined) throw new Error('the broker did not listen on a gRPC port');
  return {
    broker,
    endpoints: `127.0.0.1:${port}`,
    [Symbol.asyncDispose]: () => broker.close(),
  };
}

/**
 * The client logs to `~/logs/rocketmq` unless given a logger: this one keeps its lines in memory,
 * so a failing test can print them.
 */
export function memoryLogger(): ILogger & { readonly lines: string[] } {
  const lines: string[] = [];
  const keep =
    (level: string) =>
    (...args: unknown[]) => {
      lines.push(
        `${level} ${args.map((arg) => (arg instanceof Error ? arg.message : String(arg))).join(' ')}`,
      );
    };
  return { lines, info: keep('info'), warn: keep('warn'), error: keep('error'), debug: keep('debug') };
}

/** A started producer, shut down by `await using`. */
export async function startRocketProducer(endpoints: string, topics: readonly string[] = []) {
  const producer = new Producer({ endpoints, namespace: '', logger: memoryLogger(), topics: [...topics] });
  await producer.startup();
  return Object.assign(producer, { [Symbol.asyncDispose]: () => producer.shutdown() });
}

/** A started simple consumer of `group` on `topics` (tag `*` each), shut down by `await using`. */
export async function startRocketSimpleConsumer(
  endpoints: string,
  group: string,
  topics: Readonly<Record<string, string>>,
  awaitDurationMs = 1_000,
) {
  const consumer = new SimpleConsumer({
    endpoints,
    namespace: '',
    consumerGroup: group,
    subscriptions: new Map(Object.entries(topics)),
    awaitDuration: awaitDurationMs,
    logger: memoryLogger(),
  });
  await consumer.startup();
  return Object.assign(consumer, { [Symbol.asyncDispose]: () => consumer.shutdown() });
}

/** A started push consumer, shut down by `await using`. */
export async function startRocketPushConsumer(
  endpoints: string,
  group: string,
  topics: Readonly<Record<string, string>>,
  listener: MessageListener,
) {
  const consumer = new PushConsumer({
    endpoints,
    namespace: '',
    consumerGroup: group,
    subscriptions: new Map(Object.entries(topics)),
    messageListener: listener,
    logger: memoryLogger(),
  });
  await consumer.startup();
  return Object.assign(consumer, { [Symbol.asyncDispose]: () => consumer.shutdown() });
}
