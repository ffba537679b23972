import { randomBytes } from 'node:crypto';
import {
  AckPolicy,
  type Consumer,
  connect,
  DeliverPolicy,
  type JetStreamClient,
  type JsMsg,
  type NatsConnection,
  StorageType,
} from 'nats';
import { countdown, percentile, rate, runPool } from '../pool.js';
import { type Fairness, fairnessOf } from '../report/fairness.js';
import { W1_MESSAGES } from '../workloads/w1-publish.js';
import { W2_MESSAGES, W2_WARM_UP_MESSAGES } from '../workloads/w2-push-consume.js';
import { W2C10_CACHED_EACH, W2C10_CONSUMERS } from '../workloads/w2c10-group-consume.js';
import { W2S_MESSAGES } from '../workloads/w2s-simple-consume.js';
import { LatencyRecorder, type LatencySummary, paced } from '../workloads/w3-latency.js';
import { type RetrySummary, W4_MESSAGES } from '../workloads/w4-retry.js';
import { startNatsServer } from './nats-server.js';

/**
 * The workloads against NATS JetStream through the `nats` client, with the client pattern of ours:
 * awaited publishes with 1,000 in flight (W1), a pull consumer's `consume()` with a 1,000-message
 * buffer acking each message (W2, W3; push consumers are legacy in nats.js), `fetch()` of 32 with
 * each ack awaited as `ackAck()` by 8 loops (W2s), and `nak(200)` for the retry (W4).
 * Each run gets a fresh server; `durability` receives how it stores.
 */
const BODY = randomBytes(256);
const IN_FLIGHT = 1_000;
const WARM_UP = 5_000;
const CACHED = 1_000;
const RECEIVERS = 8;
const BATCH = 32;
const RETRY_DELAY_MS = 200;

interface Session {
  /** The server's URL, for a workload that opens connections of its own (W2c10). */
  readonly url: string;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  /** A file-storage stream on subject `name`, and a durable explicit-ack consumer on it. */
  streamWithConsumer(name: string, maxAckPending?: number): Promise<Consumer>;
  publishAll(subject: string, messages: number): Promise<void>;
}

async function withJetStream<T>(durability: Set<string>, work: (session: Session) => Promise<T>): Promise<T> {
  await using server = await startNatsServer();
  durability.add(server.durability);
  const nc = await connect({ servers: server.url });
  try {
    const jsm = await nc.jetstreamManager();
    const js = nc.jetstream();
    return await work({
      url: server.url,
      nc,
      js,
      async streamWithConsumer(name, maxAckPending = CACHED) {
        await jsm.streams.add({ name, subjects: [name], storage: StorageType.File, num_replicas: 1 });
        await jsm.consumers.add(name, {
          durable_name: name,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          max_ack_pending: maxAckPending,
        });
        return js.consumers.get(name, name);
      },
      async publishAll(subject, messages) {
        await runPool(messages, IN_FLIGHT, async () => void (await js.publish(subject, BODY)));
      },
    });
  } finally {
    await nc.close();
  }
}

export async function jetStreamW1(durability: Set<string>): Promise<number> {
  return withJetStream(durability, async ({ nc, js }) => {
    const jsm = await nc.jetstreamManager();
    for (const name of ['warmup', 'w1']) {
      await jsm.streams.add({ name, subjects: [name], storage: StorageType.File, num_replicas: 1 });
    }
    await runPool(WARM_UP, IN_FLIGHT, async () => void (await js.publish('warmup', BODY)));
    const startedAt = performance.now();
    await runPool(W1_MESSAGES, IN_FLIGHT, async () => void (await js.publish('w1', BODY)));
    return rate(W1_MESSAGES, startedAt);
  });
}

export async function jetStreamW2(durability: Set<string>): Promise<number> {
  return withJetStream(durability, async (session) => {
    // W2's warm-up round, as ours gets (W2_WARM_UP_MESSAGES), on a stream of its own.
    await drainJetStream(session, 'w2-warm-up', W2_WARM_UP_MESSAGES);
    return drainJetStream(session, 'w2', W2_MESSAGES);
  });
}

/** Publish `messages` to a new stream `name`, then consume and ack them all: their consume rate. */
async function drainJetStream(session: Session, name: string, messages: number): Promise<number> {
  const consumer = await session.streamWithConsumer(name);
  await session.publishAll(name, messages);
  const processed = countdown(messages);
  const startedAt = performance.now();
  const consuming = await consumer.consume({
    max_messages: CACHED,
    callback: (message) => {
      message.ack();
      processed.tick();
    },
  });
  await processed.done;
  const result = rate(messages, startedAt);
  await consuming.close();
  return result;
}

/**
 * W2c10: ten connections, each with its own `consume()` of 100 on the one durable consumer (whose
 * `max_ack_pending` stays W2's 1,000), acking each message; each connection's count gives the fairness.
 */
export async function jetStreamW2c10(durability: Set<string>): Promise<{ rate: number } & Fairness> {
  return withJetStream(durability, async (session) => {
    // W2's warm-up round, as ours gets, on a stream of its own.
    await drainJetStream(session, 'w2-warm-up', W2_WARM_UP_MESSAGES);
    await session.streamWithConsumer('w2c10');
    await session.publishAll('w2c10', W2_MESSAGES);
    const connections: NatsConnection[] = [];
    try {
      for (let i = 0; i < W2C10_CONSUMERS; i++) connections.push(await connect({ servers: session.url }));
      const consumers = await Promise.all(
        connections.map((nc) => nc.jetstream().consumers.get('w2c10', 'w2c10')),
      );
      const processed = countdown(W2_MESSAGES);
      const perConsumer = consumers.map(() => 0);
      const startedAt = performance.now();
      const subscriptions = await Promise.all(
        consumers.map((consumer, index) =>
          consumer.consume({
            max_messages: W2C10_CACHED_EACH,
            callback: (message) => {
              message.ack();
              perConsumer[index] = (perConsumer[index] ?? 0) + 1;
              processed.tick();
            },
          }),
        ),
      );
      await processed.done;
      const figures = { rate: rate(W2_MESSAGES, startedAt), ...fairnessOf(perConsumer) };
      await Promise.all(subscriptions.map((messages) => messages.close()));
      return figures;
    } finally {
      await Promise.all(connections.map((nc) => nc.close()));
    }
  });
}

export async function jetStreamW2s(durability: Set<string>): Promise<number> {
  return withJetStream(durability, async (session) => {
    const consumer = await session.streamWithConsumer('w2s');
    await session.publishAll('w2s', W2S_MESSAGES);
    let acked = 0;
    let finishedAt = Number.NaN;
    const startedAt = performance.now();
    await runPool(RECEIVERS, RECEIVERS, async () => {
      for (let guard = 0; guard < W2S_MESSAGES && acked < W2S_MESSAGES; guard++) {
        // A fetch that finds the stream empty waits out its `expires` (1 s at least): the clock
        // stops at the last ack instead, below.
        const batch: JsMsg[] = [];
        for await (const message of await consumer.fetch({ max_messages: BATCH, expires: 1_000 })) {
          batch.push(message);
        }
        if (batch.length === 0) break;
        await Promise.all(batch.map((message) => message.ackAck()));
        acked += batch.length;
        if (acked === W2S_MESSAGES) finishedAt = performance.now();
      }
    });
    if (acked !== W2S_MESSAGES) throw new Error(`JetStream W2s acked ${acked} of ${W2S_MESSAGES}`);
    return W2S_MESSAGES / ((finishedAt - startedAt) / 1_000);
  });
}

export async function jetStreamW3(durability: Set<string>): Promise<LatencySummary> {
  return withJetStream(durability, async (session) => {
    const consumer = await session.streamWithConsumer('w3');
    const recorder = new LatencyRecorder();
    const messages = await consumer.consume({
      max_messages: CACHED,
      callback: (message) => {
        recorder.arrived(message.data);
        message.ack();
      },
    });
    const failures: unknown[] = [];
    await paced(
      (body) => void session.js.publish('w3', body).catch((error) => failures.push(error)),
      recorder,
    );
    await messages.close();
    if (failures.length > 0)
      throw new Error(`JetStream W3: ${failures.length} publishes failed: ${failures[0]}`);
    return recorder.summary();
  });
}

/** W4 twice on one server, like ours: cold (its first work), then warm on a new stream. */
export async function jetStreamW4(
  durability: Set<string>,
): Promise<{ cold: RetrySummary; warm: RetrySummary }> {
  return withJetStream(durability, async (session) => ({
    cold: await retryRound(session, 'w4'),
    warm: await retryRound(session, 'w4warm'),
  }));
}

async function retryRound(session: Session, name: string): Promise<RetrySummary> {
  // Messages waiting out their nak delay still count as pending acks: unbounded here, so that only
  // the client's 1,000-message buffer bounds the flow, as our cache does (our WaitingRetry messages
  // hold no credit).
  const consumer = await session.streamWithConsumer(name, -1);
  await session.publishAll(name, W4_MESSAGES);
  const failedAt = new Map<number, number>();
  const lateness: number[] = [];
  const succeeded = countdown(W4_MESSAGES);
  const startedAt = performance.now();
  const messages = await consumer.consume({
    max_messages: CACHED,
    callback: (message) => {
      if (message.info.redeliveryCount === 1) {
        failedAt.set(message.seq, performance.now());
        message.nak(RETRY_DELAY_MS);
        return;
      }
      lateness.push(performance.now() - (failedAt.get(message.seq) ?? 0) - RETRY_DELAY_MS);
      message.ack();
      succeeded.tick();
    },
  });
  await succeeded.done;
  const totalMs = performance.now() - startedAt;
  await messages.close();
  return { totalMs, latenessP50Ms: percentile(lateness, 50), latenessP99Ms: percentile(lateness, 99) };
}
