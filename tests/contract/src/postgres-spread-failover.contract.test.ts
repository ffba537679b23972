import { rmSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { createMessageId } from '@ricochet/client';
import { BrokerError } from '@ricochet/protocol';
import { ConsumeResult, PushConsumer } from '@ricochet/push-consumer';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChildBroker } from './support/child-broker.js';
import { FAST_BACKOFF, sendsKeepingIds, startProducer, text } from './support/clients.js';
import { eventually, startRecordingConsumer } from './support/push.js';
import {
  adminOf,
  LEASE_MS,
  pickRoles,
  QUEUES,
  startSpreadCluster,
  untilRoutedToLiveOwners,
} from './support/spread-cluster.js';
import { storedMessages } from './support/test-store.js';

/**
 * DESIGN.md §9 (issue 15 item 5): failover of queues spread over three brokers
 * (`--store-spread`), each a real `ricochet-broker` process on one PostgreSQL database. When an
 * owner of some queues is killed (`kill -9`) or hangs past its lease (SIGSTOP), the live brokers
 * route its queues to new owners within a few seconds; every message whose send resolved is
 * consumed, retries included (R1, R2, P3); and a woken ex-owner stores nothing after losing its
 * leases: its store gives up a lease it could not renew in time, and the fence (the lease's
 * epoch, checked in every transaction) refuses whatever would get past that.
 */
/** A dead owner's queues are free the moment its session ends; a hung one's a lease later. */
const TAKEOVER_BUDGET_MS = 5_000;
const directories: string[] = [];

afterEach(() => {
  for (const dir of directories.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * Resolves once every item of `expected` is in `seen`, checked again at each `onChange`; rejects
 * after `budgetMs`, naming what is missing (a lost message never announces itself).
 */
function untilAllSeen(
  expected: ReadonlySet<string>,
  seen: ReadonlySet<string>,
  onChange: (listener: () => void) => void,
  budgetMs: number,
): Promise<void> {
  const missing = () => [...expected].filter((item) => !seen.has(item));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`never consumed: ${missing().join(', ')}`)), budgetMs);
    const check = () => {
      if (missing().length > 0) return;
      clearTimeout(timer);
      resolve();
    };
    onChange(check);
    check();
  });
}

/**
 * The kill -9 case: a producer on one broker sending while a push consumer fails each message's
 * first delivery and has it retried 200 ms later; an owner of queues is killed halfway. The
 * producer is never on it; the consumer is on a third broker, or on it with a third to reconnect to.
 */
async function killOwnerUnderLoad(consumerOn: 'a third broker' | 'the victim'): Promise<void> {
  await using cluster = await startSpreadCluster(directories);
  const { store, brokers } = cluster;
  await untilRoutedToLiveOwners(brokers, 60_000);
  const { target: victim, targetQueues, producerBroker, consumerBroker } = await pickRoles(brokers);
  await adminOf(producerBroker).putGroup('billing', {
    startFrom: 'earliest',
    retryPolicy: { type: 'stepped', delaysMs: [200] },
    maxRetries: 3,
  });
  // Each message fails its first delivery and is retried 200 ms later: retries are pending in
  // the victim's queues when it dies, and the new owners must deliver them (P3 across owners).
  const failedOnce = new Set<string>();
  const succeeded = new Set<string>();
  let deliveries = 0;
  let onSuccess = () => {};
  await using consumer = new PushConsumer({
    endpoint:
      consumerOn === 'the victim' ? [victim.endpoint, consumerBroker.endpoint] : consumerBroker.endpoint,
    group: 'billing',
    subscriptions: { orders: '*' },
    reconnectBackoff: FAST_BACKOFF,
    // The failures are the test's own; what it checks is what the listener saw.
    onListenerError: () => {},
    onError: () => {},
    listener: (message) => {
      deliveries++;
      const body = text(message.body);
      if (!failedOnce.has(body)) {
        failedOnce.add(body);
        return ConsumeResult.FAILURE;
      }
      succeeded.add(body);
      onSuccess();
      return ConsumeResult.SUCCESS;
    },
  });
  await consumer.start();
  await using producer = await startProducer(producerBroker.endpoint);
  // R2/R3: a message keeps its id when sent again, so one stored before a refusal is stored once.
  const { acknowledged, refused, send } = sendsKeepingIds(producer, 'orders');
  const messages = 480;
  const killAfter = 150;
  let next = 0;
  let sentAtKill = 0;
  /** Kill the victim; resolves with the time until the live brokers route every queue to a live owner. */
  const killAndTakeOver = async () => {
    sentAtKill = next;
    const killedAt = performance.now();
    await victim.kill9();
    await untilRoutedToLiveOwners([producerBroker, consumerBroker], 30_000);
    return performance.now() - killedAt;
  };
  let takeover: Promise<number> | undefined;
  // A few sends in flight at a time, as a busy producer has; the kill comes in the middle of them.
  const sender = async () => {
    while (next < messages) {
      await send(`m${next++}`, createMessageId());
      if (acknowledged.size >= killAfter) takeover ??= killAndTakeOver();
    }
  };
  await Promise.all([sender(), sender(), sender(), sender()]);
  expect(takeover).toBeDefined();
  const takeoverMs = await takeover;
  console.log(
    `kill -9 of the owner of queues ${targetQueues.join(', ')}, consumer on ${consumerOn}: every queue routed to a live owner ` +
      `${Math.round(takeoverMs ?? 0)} ms after the kill; ${sentAtKill} of ${messages} sends made before it, ` +
      `${refused.length} refused during the takeover`,
  );
  expect(takeoverMs).toBeLessThan(TAKEOVER_BUDGET_MS);
  expect(sentAtKill).toBeLessThan(messages);
  // What the takeover refused is sent again, with the same ids, and new messages after it: the
  // new owners take them all.
  for (const { body, messageId } of refused.splice(0)) await send(body, messageId);
  for (let index = messages; index < messages + 50; index++) await send(`m${index}`, createMessageId());
  expect(refused).toEqual([]);
  await untilAllSeen(acknowledged, succeeded, (listener) => (onSuccess = listener), 60_000);
  // Every acknowledged message was failed once, then retried to success.
  expect([...acknowledged].filter((body) => !failedOnce.has(body))).toEqual([]);
  expect(deliveries).toBeGreaterThanOrEqual(acknowledged.size * 2);
  const sql = postgres(store, { max: 1, onnotice: () => {} });
  await using _sql = { [Symbol.asyncDispose]: () => sql.end({ timeout: 5 }) };
  // Stored once each (R3), nothing dead-lettered, and each committed in the group.
  expect(await storedMessages(sql)).toBe(acknowledged.size);
  const group = await eventually(
    () => adminOf(consumerBroker).getGroup('billing'),
    (view) => view.stats.committed >= acknowledged.size,
    30_000,
  );
  expect(group.stats).toMatchObject({ committed: acknowledged.size, dlq: 0 });
}

/** Sessions of the store's database idle inside a transaction for more than 200 ms. */
async function stalledTransactions(sql: postgres.Sql): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count(*)::int as count from pg_stat_activity
     where datname = current_database() and state like 'idle in transaction%'
       and state_change < clock_timestamp() - interval '200 milliseconds'`;
  return row?.count ?? 0;
}

/**
 * SIGSTOP `broker` inside one of its write transactions, if it can: after `ricochet_fence` locked
 * the lease row and before its COMMIT, the hardest place to hang. The broker's writer session
 * then ends after the lease TTL idle in its transaction (`idle_in_transaction_session_timeout`),
 * which frees the lock; without that, no broker could take the lease until the paused one woke.
 *
 * `burst` makes the broker write (sends through it); a client that stopped shows as `idle in
 * transaction` a moment later. When a pause lands between transactions, the broker is woken and
 * stopped again, up to 20 times, then left stopped there. Resolves with when it was stopped.
 */
async function pauseInsideTransaction(
  broker: ChildBroker,
  sql: postgres.Sql,
  burst: (attempt: number) => Promise<unknown>,
): Promise<{ pausedAt: number; inside: boolean }> {
  for (let attempt = 0; ; attempt++) {
    const writing = burst(attempt);
    // Some of the burst answered: the broker is committing the rest.
    await delay(20);
    broker.process.kill('SIGSTOP');
    const pausedAt = performance.now();
    // Past a round trip of any live broker: what is still open then waits for a stopped client.
    await delay(300);
    if ((await stalledTransactions(sql)) > 0) return { pausedAt, inside: true };
    if (attempt === 19) return { pausedAt, inside: false };
    broker.process.kill('SIGCONT');
    await writing;
  }
}

describe('queues spread over three brokers on one PostgreSQL store', () => {
  it('routes a killed owner’s queues to live brokers within 5 s, and consumes every acknowledged message, retries included', async () => {
    await killOwnerUnderLoad('a third broker');
  }, 180_000);

  it('does the same when the owner killed is the consumer’s broker: it reconnects to another and the retries go on', async () => {
    await killOwnerUnderLoad('the victim');
  }, 180_000);

  it('serves a paused owner’s queues elsewhere once its lease ran out, and stores nothing the woken broker writes for them', async () => {
    await using cluster = await startSpreadCluster(directories);
    const { store, brokers } = cluster;
    await untilRoutedToLiveOwners(brokers, 60_000);
    const { target: paused, targetQueues, producerBroker, consumerBroker } = await pickRoles(brokers);
    await adminOf(producerBroker).putGroup('billing', { startFrom: 'earliest' });
    const consumed = new Set<string>();
    let onConsumed = () => {};
    await using _consumer = await startRecordingConsumer(
      consumerBroker.endpoint,
      { group: 'billing', subscriptions: { orders: '*' } },
      (message) => {
        consumed.add(text(message.body));
        onConsumed();
        return ConsumeResult.SUCCESS;
      },
    );
    const whenConsumed = (bodies: ReadonlySet<string>) =>
      untilAllSeen(bodies, consumed, (listener) => (onConsumed = listener), 30_000);
    await using producer = await startProducer(producerBroker.endpoint);
    // A client of the broker about to hang: its sends reach it while it is stopped, and are
    // answered when it wakes, by a broker whose leases were taken meanwhile. One attempt each, so
    // that a refusal is seen rather than retried away.
    await using witness = await startProducer(paused.endpoint, { maxAttempts: 1, requestTimeoutMs: 20_000 });
    const acknowledged = new Set<string>();
    /** Send `count` messages through the producer's broker; the bodies of those stored in `queues`. */
    const sendThrough = async (prefix: string, count: number, queues: readonly number[] = []) => {
      const inQueues = new Set<string>();
      for (let index = 0; index < count; index++) {
        const body = `${prefix}${index}`;
        const receipt = await producer.send({ topic: 'orders', body });
        acknowledged.add(body);
        // With queues, an offset is `offset × queues + queue` (support/store-queues.ts).
        if (queues.includes(receipt.offset % QUEUES)) inQueues.add(body);
      }
      return inQueues;
    };
    await whenConsumed(await sendThrough('before', 20));
    const sql = postgres(store, { max: 1, onnotice: () => {} });
    await using _sql = { [Symbol.asyncDispose]: () => sql.end({ timeout: 5 }) };
    // Woken whatever happens below, before the broker's own handle kills it.
    await using _woken = { [Symbol.asyncDispose]: async () => void paused.process.kill('SIGCONT') };
    // Sends through the broker about to hang, to catch it writing; one attempt each, as the
    // witness's: those that resolved are stored (checked below).
    await using load = await startProducer(paused.endpoint, { maxAttempts: 1, requestTimeoutMs: 20_000 });
    const loads: { body: string; messageId: string; outcome: Promise<boolean> }[] = [];
    const burst = (attempt: number) => {
      const sent = [...Array(30).keys()].map((i) => {
        const message = { body: `load${attempt}-${i}`, messageId: createMessageId() };
        const outcome = load.send({ topic: 'orders', ...message }).then(
          () => true,
          () => false,
        );
        loads.push({ ...message, outcome });
        return outcome;
      });
      return Promise.all(sent);
    };
    const { pausedAt, inside } = await pauseInsideTransaction(paused, sql, burst);
    const witnessed = [...Array(20).keys()].map((i) => ({
      body: `witness${i}`,
      messageId: createMessageId(),
    }));
    const witnessSends = Promise.allSettled(
      witnessed.map((message) => witness.send({ topic: 'orders', ...message })),
    );
    await untilRoutedToLiveOwners([producerBroker, consumerBroker], 30_000);
    const takeoverMs = performance.now() - pausedAt;
    // Its queues, taken by the others, serve sends and deliveries while it is still stopped.
    const whilePaused = await sendThrough('paused', 60, targetQueues);
    expect(whilePaused.size).toBeGreaterThan(0);
    await whenConsumed(whilePaused);
    // A pause well past the lease, as a VM paused for seconds; the broker is stopped throughout.
    const remainingMs = 3_000 - (performance.now() - pausedAt);
    if (remainingMs > 0) await delay(remainingMs);
    paused.process.kill('SIGCONT');
    const resumedAt = performance.now();
    const outcomes = await witnessSends;
    // Its store of each queue it owned stopped taking writes on waking (the lease not renewed
    // within its time, or the fence): it gives the queues up instead of serving them, and answers
    // their sends `503`, which a producer retries (R2). It does not exit, unlike a deposed owner
    // of a whole store: still live, it is assigned its queues again and takes them back.
    await paused.printed(/was taken from this broker/, 10_000);
    await untilRoutedToLiveOwners(brokers, 30_000);
    expect(paused.process.exitCode).toBeNull();
    const refused = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
    expect(refused.filter((error) => !(error instanceof BrokerError && error.code === 503))).toEqual([]);
    console.log(
      `SIGSTOP of the owner of queues ${targetQueues.join(', ')}: every queue routed to a live owner ` +
        `${Math.round(takeoverMs)} ms after the pause; woken after ${Math.round(resumedAt - pausedAt)} ms, ` +
        `it had its queues back ${Math.round(performance.now() - resumedAt)} ms later; ` +
        `${refused.length} of ${witnessed.length} sends it was given were refused; ` +
        `paused ${inside ? 'inside a write transaction' : 'between write transactions (20 tries missed)'}`,
    );
    expect(takeoverMs).toBeLessThan(LEASE_MS + TAKEOVER_BUDGET_MS);
    await whenConsumed(await sendThrough('after', 20));

    // Nothing it was given is stored unless its send resolved: a refused one is not in the store.
    const admin = adminOf(producerBroker);
    for (const [index, { body, messageId }] of witnessed.entries()) {
      const stored = outcomes[index]?.status === 'fulfilled';
      const response = await admin.fetch('GET', `/v1/messages/${messageId}`);
      expect({ body, status: response.status }).toEqual({ body, status: stored ? 200 : 404 });
      if (stored) acknowledged.add(body);
    }
    // A load send answered is stored. One that failed may be stored too: it may have committed
    // just before the pause, its answer lost with the session (at least once; a producer's retry
    // would be answered as a duplicate, R3). Whatever is stored is consumed and counted.
    for (const { body, messageId, outcome } of loads) {
      const resolved = await outcome;
      const response = await admin.fetch('GET', `/v1/messages/${messageId}`);
      if (resolved) expect({ body, status: response.status }).toEqual({ body, status: 200 });
      if (response.status === 200) acknowledged.add(body);
    }
    await whenConsumed(acknowledged);
    expect(await storedMessages(sql)).toBe(acknowledged.size);
    const group = await eventually(
      () => admin.getGroup('billing'),
      (view) => view.stats.committed >= acknowledged.size,
      30_000,
    );
    expect(group.stats.committed).toBe(acknowledged.size);
  }, 180_000);
});
