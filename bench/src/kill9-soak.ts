import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Producer } from '@ricochet/producer';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import { groupStats, putGroup } from './admin.js';
import { type KillableBroker, startKillableBroker } from './processes.js';

/**
 * `pnpm soak [kills] [msPerLife]`: crash safety under load, as an operator would try it. Four
 * producers send (each `send` awaited, with the producer's own retries and message-id reuse) and a
 * push consumer group consumes, while the broker is killed with SIGKILL and started again on the
 * same port and data directory, `kills` times (default 50), after lives of about `msPerLife`
 * (default 1500 ms, ±50 %). Then it checks what a user trusts:
 * - every message whose `send` resolved reached the live group's listener (never received: 0);
 * - the group's `committed` stat equals the messages stored in the topic (each committed once);
 * - nothing is left ready, inflight or waiting.
 * Exits 1 when one of them fails.
 */
const KILLS = Number(process.argv[2] ?? 50);
const MS_PER_LIFE = Number(process.argv[3] ?? 1_500);
const PRODUCERS = 4;
const TOPIC = 'soak';
const GROUP = 'soak';
/** How long the group may take to catch up after the last restart. */
const DRAIN_TIMEOUT_MS = 60_000;
const FAST_RECONNECT = { initialMs: 20, maxMs: 200, minConnectTimeoutMs: 2_000 } as const;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const count = (n: number) => n.toLocaleString('en');

const dataDir = mkdtempSync(join(tmpdir(), 'ricochet-soak-'));
let broker: KillableBroker = await startKillableBroker(dataDir);
const { endpoint, port } = broker;
try {
  await putGroup(endpoint, GROUP, { startFrom: 'earliest' });

  const received = new Set<string>();
  let deliveries = 0;
  const consumer = new PushConsumer({
    endpoint,
    group: GROUP,
    subscriptions: { [TOPIC]: '*' },
    reconnectBackoff: FAST_RECONNECT,
    onError: () => {},
    listener: (message) => {
      deliveries++;
      received.add(message.messageId);
      return ConsumeResult.SUCCESS;
    },
  });
  await consumer.start();

  const acknowledged = new Set<string>();
  let failedSends = 0;
  let sending = true;
  const producers = Array.from(
    { length: PRODUCERS },
    () =>
      new Producer({
        endpoint,
        maxAttempts: 10,
        requestTimeoutMs: 5_000,
        reconnectBackoff: FAST_RECONNECT,
      }),
  );
  const senders = producers.map(async (producer, index) => {
    for (let i = 0; sending && i < 10_000_000; i++) {
      try {
        const { messageId } = await producer.send({ topic: TOPIC, body: `producer ${index} message ${i}` });
        acknowledged.add(messageId);
      } catch {
        failedSends++;
      }
    }
  });

  const startedAt = performance.now();
  for (let kill = 1; kill <= KILLS; kill++) {
    await sleep(MS_PER_LIFE * (0.5 + Math.random()));
    await broker.kill9();
    broker = await startKillableBroker(dataDir, port);
    if (kill % 10 === 0) console.log(`  ${kill} kills, ${count(acknowledged.size)} acknowledged so far`);
  }
  sending = false;
  await Promise.all(senders);
  await Promise.all(producers.map((producer) => producer.close()));

  const drainDeadline = performance.now() + DRAIN_TIMEOUT_MS;
  const neverReceived = () => [...acknowledged].filter((id) => !received.has(id));
  while (neverReceived().length > 0 && performance.now() < drainDeadline) await sleep(100);
  // Acks travel after the listener returned; give the group's stats the same chance to settle.
  let stats = await groupStats(endpoint, GROUP);
  while ((stats.inflight ?? 0) + (stats.ready ?? 0) > 0 && performance.now() < drainDeadline) {
    await sleep(100);
    stats = await groupStats(endpoint, GROUP);
  }
  await consumer.close();
  const topic = (await (await fetch(`http://127.0.0.1:${port}/v1/topics/${TOPIC}`)).json()) as {
    stats: { messages: number };
  };
  const stored = topic.stats.messages;

  const missing = neverReceived();
  const seconds = (performance.now() - startedAt) / 1_000;
  console.log(
    `kill -9 soak: ${KILLS} kills in ${seconds.toFixed(0)} s; ${count(acknowledged.size)} sends acknowledged (${count(failedSends)} failed after retries), ${count(stored)} messages stored`,
  );
  console.log(
    `  live group: ${count(received.size)} distinct messages received in ${count(deliveries)} deliveries; acknowledged but never received: ${missing.length}`,
  );
  console.log(
    `  group stats: committed ${count(stats.committed ?? 0)} (stored ${count(stored)}), ready ${stats.ready}, inflight ${stats.inflight}, waitingRetry ${stats.waitingRetry}`,
  );
  const ok =
    missing.length === 0 &&
    stats.committed === stored &&
    stats.ready === 0 &&
    stats.inflight === 0 &&
    stats.waitingRetry === 0;
  console.log(
    ok ? 'PASS' : `FAIL${missing.length > 0 ? `: never received ${missing.slice(0, 10).join(', ')}` : ''}`,
  );
  process.exitCode = ok ? 0 : 1;
} finally {
  await broker.kill9();
  rmSync(dataDir, { recursive: true, force: true });
}
