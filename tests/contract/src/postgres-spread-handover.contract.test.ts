import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Producer } from '@ricochet/producer';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChildBroker, startChildBroker } from './support/child-broker.js';
import { startProducer } from './support/clients.js';
import { LEASE_MS, QUEUES, startSpreadCluster, untilRoutedToLiveOwners } from './support/spread-cluster.js';
import { postgresDatabase, storedMessages } from './support/test-store.js';

/**
 * Issue 33 item 1 (DESIGN.md §9, R2): sends ride through handovers. While a spread cluster moves
 * its queues (three brokers starting together, a broker joining, one leaving) a queue is answered
 * `503 BROKER_UNAVAILABLE`, "between owners", for a moment; a producer with default options
 * retries that after a short backoff until its `sendTimeoutMs`, so not one send fails, and R3
 * keeps each message stored once.
 */
const SPREAD_FLAGS = ['--store-queues', `${QUEUES}`, '--store-spread', '--store-lease-ms', `${LEASE_MS}`];
/** Senders in flight at once, each awaiting its send before the next: many, so many sends meet each handover. */
const SENDERS = 32;
const directories: string[] = [];

afterEach(() => {
  for (const dir of directories.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function brokerDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ricochet-handover-'));
  directories.push(dir);
  return dir;
}

/** What a run of sends saw: each send's outcome and the longest one. */
interface Load {
  readonly acknowledged: Set<string>;
  readonly failed: { readonly body: string; readonly code: unknown; readonly message: string }[];
  longestMs: number;
  sent: number;
}

/**
 * {@link SENDERS} senders through `producer` until `stop()` says so or `maxMessages` were sent,
 * whichever comes first; bounded in count. Resolves once every send made has settled.
 */
function sendUnderLoad(
  producer: Producer,
  load: Load,
  maxMessages: number,
  stop: () => boolean,
): Promise<void> {
  const sender = async () => {
    while (!stop() && load.sent < maxMessages) {
      const body = `m${load.sent++}`;
      const startedAt = performance.now();
      try {
        await producer.send({ topic: 'orders', body });
        load.acknowledged.add(body);
      } catch (error) {
        const { code, message } = error as { code?: unknown; message: string };
        load.failed.push({ body, code, message });
      }
      load.longestMs = Math.max(load.longestMs, performance.now() - startedAt);
    }
  };
  return Promise.all(Array.from({ length: SENDERS }, sender)).then(() => {});
}

const newLoad = (): Load => ({ acknowledged: new Set(), failed: [], longestMs: 0, sent: 0 });

/** Each acknowledged message is stored, once (R1, R3): the database holds exactly as many. */
async function expectStoredOnce(store: string, load: Load): Promise<void> {
  const sql = postgres(store, { max: 1, onnotice: () => {} });
  await using _sql = { [Symbol.asyncDispose]: () => sql.end({ timeout: 5 }) };
  expect(await storedMessages(sql)).toBe(load.acknowledged.size);
}

describe('§9 with R2: sends ride through handovers of spread queues', () => {
  it('three brokers started together: a producer sending from the first broker up sees 0 failed sends', async () => {
    const store = await postgresDatabase(`handover_${randomBytes(6).toString('hex')}`);
    const starting = [0, 1, 2].map(() => startChildBroker(brokerDir(), ['--store', store, ...SPREAD_FLAGS]));
    // Every broker that started is killed, whatever happens below.
    await using _brokers = {
      [Symbol.asyncDispose]: async () => {
        const started = await Promise.allSettled(starting);
        await Promise.all(
          started.map((start) => (start.status === 'fulfilled' ? start.value.kill9() : undefined)),
        );
      },
    };
    const first = await Promise.race(starting);
    const startedAt = performance.now();
    // Default options but the reconnect backoff: sendTimeoutMs 30 s, maxAttempts 3.
    await using producer = await startProducer(first.endpoint);
    const load = newLoad();
    let settled = false;
    const sending = sendUnderLoad(producer, load, 3_000, () => settled);
    const brokers = (await Promise.all(starting)) as [ChildBroker, ChildBroker, ChildBroker];
    const routedMs = await untilRoutedToLiveOwners(brokers, 30_000);
    const settledAfterMs = performance.now() - startedAt;
    // A little more once every queue has its owner, then stop.
    const sentAtSettle = load.sent;
    await new Promise((resolve) => setTimeout(resolve, 300));
    settled = true;
    await sending;
    console.log(
      `three brokers started together: ${load.sent} sends (${sentAtSettle} before every queue was routed to its owner, ` +
        `${Math.round(settledAfterMs)} ms after the first broker listened, ${Math.round(routedMs)} ms after the last), ` +
        `${load.failed.length} failed, the longest ${Math.round(load.longestMs)} ms`,
    );
    expect(load.failed).toEqual([]);
    expect(sentAtSettle).toBeGreaterThan(0);
    await expectStoredOnce(store, load);
  });

  it('a broker joining and one leaving under load: 0 failed sends, 0 lost', async () => {
    await using cluster = await startSpreadCluster(directories);
    const { store, brokers } = cluster;
    await untilRoutedToLiveOwners(brokers, 60_000);
    const [entry, stays, leaves] = brokers;
    await using producer = await startProducer(entry.endpoint);
    const load = newLoad();
    let done = false;
    const sending = sendUnderLoad(producer, load, 20_000, () => done);
    try {
      // A fourth broker joins: queues move to it.
      const joinedAt = performance.now();
      await using joined = await startChildBroker(brokerDir(), ['--store', store, ...SPREAD_FLAGS]);
      await untilRoutedToLiveOwners([entry, stays, leaves, joined], 30_000);
      const joinMs = performance.now() - joinedAt;
      const sentAtJoin = load.sent;
      // One leaves (SIGTERM, a graceful stop): its queues move to the others.
      const leftAt = performance.now();
      leaves.process.kill('SIGTERM');
      await leaves.exited;
      await untilRoutedToLiveOwners([entry, stays, joined], 30_000);
      const leaveMs = performance.now() - leftAt;
      await new Promise((resolve) => setTimeout(resolve, 300));
      done = true;
      await sending;
      console.log(
        `a broker joining (routed ${Math.round(joinMs)} ms after it was started, ${sentAtJoin} sends by then) and one ` +
          `leaving (routed ${Math.round(leaveMs)} ms after SIGTERM): ${load.sent} sends, ${load.failed.length} failed, ` +
          `the longest ${Math.round(load.longestMs)} ms`,
      );
    } finally {
      done = true;
      await sending;
    }
    expect(load.failed).toEqual([]);
    expect(load.sent).toBeGreaterThan(0);
    await expectStoredOnce(store, load);
  });
});
