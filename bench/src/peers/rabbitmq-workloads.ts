import { randomBytes } from 'node:crypto';
import { type ChannelModel, type ConfirmChannel, connect } from 'amqplib';
import { countdown, percentile, rate, runPool } from '../pool.js';
import { type Fairness, fairnessOf } from '../report/fairness.js';
import { W1_MESSAGES } from '../workloads/w1-publish.js';
import { W2_MESSAGES, W2_WARM_UP_MESSAGES } from '../workloads/w2-push-consume.js';
import { W2C10_CACHED_EACH, W2C10_CONSUMERS } from '../workloads/w2c10-group-consume.js';
import { LatencyRecorder, type LatencySummary, paced } from '../workloads/w3-latency.js';
import { type RetrySummary, W4_MESSAGES } from '../workloads/w4-retry.js';
import { startRabbitMqServer } from './rabbitmq-server.js';

/**
 * The workloads against RabbitMQ quorum queues through `amqplib`, with the client pattern of
 * ours: persistent messages on a confirm channel, each publish awaited until confirmed, 1,000 in
 * flight (W1); a consumer with prefetch 1,000 acking each message by hand (W2, W3); and for W4 the
 * usual dead-letter loop: the work queue dead-letters a rejected message into a retry queue whose
 * `x-message-ttl` of 200 ms dead-letters it back into the work queue. Each run gets a fresh server.
 */
const BODY = randomBytes(256);
const IN_FLIGHT = 1_000;
const WARM_UP = 5_000;
const PREFETCH = 1_000;
const RETRY_DELAY_MS = 200;

const quorum = (extra: Record<string, unknown> = {}) => ({
  durable: true,
  arguments: { 'x-queue-type': 'quorum', ...extra },
});

interface Session {
  /** The server's AMQP URL, for a workload that opens connections of its own (W2c10). */
  readonly url: string;
  readonly connection: ChannelModel;
  readonly publisher: ConfirmChannel;
  /** Publish persistent and resolve once the broker confirmed it. */
  publish(queue: string, body: Buffer, messageId?: string): Promise<void>;
}

async function withRabbitMq<T>(durability: Set<string>, work: (session: Session) => Promise<T>): Promise<T> {
  await using server = await startRabbitMqServer();
  durability.add(server.durability);
  // amqplib leaves Nagle's algorithm on unless asked; nats.js and ws turn it off, and so do we here:
  // otherwise W3 measures the 40 ms delayed-ack timer, not RabbitMQ.
  const connection = await connect(server.url, { noDelay: true });
  try {
    const publisher = await connection.createConfirmChannel();
    const publish = (queue: string, body: Buffer, messageId?: string) =>
      new Promise<void>((resolve, reject) => {
        publisher.publish(
          '',
          queue,
          body,
          { persistent: true, ...(messageId === undefined ? {} : { messageId }) },
          (error) => (error ? reject(error) : resolve()),
        );
      });
    return await work({ url: server.url, connection, publisher, publish });
  } finally {
    await connection.close();
  }
}

export async function rabbitMqW1(durability: Set<string>): Promise<number> {
  return withRabbitMq(durability, async ({ publisher, publish }) => {
    await publisher.assertQueue('warmup', quorum());
    await publisher.assertQueue('w1', quorum());
    await runPool(WARM_UP, IN_FLIGHT, () => publish('warmup', BODY));
    const startedAt = performance.now();
    await runPool(W1_MESSAGES, IN_FLIGHT, () => publish('w1', BODY));
    return rate(W1_MESSAGES, startedAt);
  });
}

export async function rabbitMqW2(durability: Set<string>): Promise<number> {
  return withRabbitMq(durability, async (session) => {
    // W2's warm-up round, as ours gets (W2_WARM_UP_MESSAGES), on a queue of its own.
    await drainRabbitMq(session, 'w2-warm-up', W2_WARM_UP_MESSAGES);
    return drainRabbitMq(session, 'w2', W2_MESSAGES);
  });
}

/** Publish `messages` to a new quorum queue `name`, then consume and ack them all: their consume rate. */
async function drainRabbitMq(
  { connection, publisher, publish }: Session,
  name: string,
  messages: number,
): Promise<number> {
  await publisher.assertQueue(name, quorum());
  await runPool(messages, IN_FLIGHT, () => publish(name, BODY));
  const channel = await connection.createChannel();
  await channel.prefetch(PREFETCH);
  const processed = countdown(messages);
  const startedAt = performance.now();
  await channel.consume(name, (message) => {
    if (message === null) return;
    channel.ack(message);
    processed.tick();
  });
  await processed.done;
  const result = rate(messages, startedAt);
  await channel.close();
  return result;
}

/**
 * W2c10: ten connections, each a channel with prefetch 100 consuming the one quorum queue and
 * acking each message by hand; each connection's count gives the fairness.
 */
export async function rabbitMqW2c10(durability: Set<string>): Promise<{ rate: number } & Fairness> {
  return withRabbitMq(durability, async (session) => {
    const { url, publisher, publish } = session;
    // W2's warm-up round, as ours gets, on a queue of its own.
    await drainRabbitMq(session, 'w2-warm-up', W2_WARM_UP_MESSAGES);
    await publisher.assertQueue('w2c10', quorum());
    await runPool(W2_MESSAGES, IN_FLIGHT, () => publish('w2c10', BODY));
    const connections: ChannelModel[] = [];
    try {
      for (let i = 0; i < W2C10_CONSUMERS; i++) connections.push(await connect(url, { noDelay: true }));
      const channels = await Promise.all(connections.map((connection) => connection.createChannel()));
      await Promise.all(channels.map((channel) => channel.prefetch(W2C10_CACHED_EACH)));
      const processed = countdown(W2_MESSAGES);
      const perConsumer = channels.map(() => 0);
      const startedAt = performance.now();
      await Promise.all(
        channels.map((channel, index) =>
          channel.consume('w2c10', (message) => {
            if (message === null) return;
            channel.ack(message);
            perConsumer[index] = (perConsumer[index] ?? 0) + 1;
            processed.tick();
          }),
        ),
      );
      await processed.done;
      return { rate: rate(W2_MESSAGES, startedAt), ...fairnessOf(perConsumer) };
    } finally {
      await Promise.all(connections.map((connection) => connection.close()));
    }
  });
}

export async function rabbitMqW3(durability: Set<string>): Promise<LatencySummary> {
  return withRabbitMq(durability, async ({ connection, publisher, publish }) => {
    await publisher.assertQueue('w3', quorum());
    const channel = await connection.createChannel();
    await channel.prefetch(PREFETCH);
    const recorder = new LatencyRecorder();
    await channel.consume('w3', (message) => {
      if (message === null) return;
      recorder.arrived(message.content);
      channel.ack(message);
    });
    const failures: unknown[] = [];
    await paced(
      (body) => void publish('w3', Buffer.from(body)).catch((error) => failures.push(error)),
      recorder,
    );
    await channel.close();
    if (failures.length > 0)
      throw new Error(`RabbitMQ W3: ${failures.length} publishes failed: ${failures[0]}`);
    return recorder.summary();
  });
}

/** W4 twice on one server, like ours: cold (its first work), then warm on new queues. */
export async function rabbitMqW4(
  durability: Set<string>,
): Promise<{ cold: RetrySummary; warm: RetrySummary }> {
  return withRabbitMq(durability, async (session) => ({
    cold: await retryRound(session, 'w4'),
    warm: await retryRound(session, 'w4-warm'),
  }));
}

async function retryRound({ connection, publisher, publish }: Session, queue: string): Promise<RetrySummary> {
  const retryQueue = `${queue}-retry-${RETRY_DELAY_MS}ms`;
  await publisher.assertQueue(
    queue,
    quorum({ 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': retryQueue }),
  );
  await publisher.assertQueue(
    retryQueue,
    quorum({
      'x-message-ttl': RETRY_DELAY_MS,
      'x-dead-letter-exchange': '',
      'x-dead-letter-routing-key': queue,
    }),
  );
  await runPool(W4_MESSAGES, IN_FLIGHT, (index) => publish(queue, BODY, String(index)));
  const channel = await connection.createChannel();
  await channel.prefetch(PREFETCH);
  const failedAt = new Map<string, number>();
  const lateness: number[] = [];
  const succeeded = countdown(W4_MESSAGES);
  const startedAt = performance.now();
  await channel.consume(queue, (message) => {
    if (message === null) return;
    const id = String(message.properties.messageId);
    // A message back from the retry queue carries the x-death header dead-lettering adds.
    if (message.properties.headers?.['x-death'] === undefined) {
      failedAt.set(id, performance.now());
      channel.nack(message, false, false);
      return;
    }
    lateness.push(performance.now() - (failedAt.get(id) ?? 0) - RETRY_DELAY_MS);
    channel.ack(message);
    succeeded.tick();
  });
  await succeeded.done;
  const totalMs = performance.now() - startedAt;
  await channel.close();
  return { totalMs, latenessP50Ms: percentile(lateness, 50), latenessP99Ms: percentile(lateness, 99) };
}
