import { Producer } from '@ricochet/producer';
import { storeArgs } from '../bench-store.js';
import { startBrokerProcess, startStandbyBrokerProcess } from '../processes.js';

/** The lease the takeover workload runs with: short enough to measure, long enough for a loaded machine. */
export const TAKEOVER_LEASE_MS = 2_000;

/** What one takeover run measured, in ms. */
export interface TakeoverFigures {
  /** `kill -9` of the owner → the standby prints `listening on`. */
  readonly afterKillMs: number;
  /** `kill -9` of the owner → the first send through the standby's endpoint is acknowledged. */
  readonly firstSendAfterKillMs: number;
  /** SIGTERM of the owner (drain, lease given back) → the standby prints `listening on`. */
  readonly afterStopMs: number;
}

const LISTENING = /listening on ws:\/\//;
const BUDGET_MS = 60_000;

/**
 * Brokers on one PostgreSQL database (`pnpm bench --store postgres takeover`): an owner and a
 * standby, 1,000 messages sent, then the owner killed with -9, and the time until the standby
 * serves; then the new owner stopped cleanly beside a second standby. A producer given the
 * standby's endpoint keeps sending through the takeover, so the first acknowledged send after the
 * kill is measured too.
 */
export async function runTakeover(): Promise<TakeoverFigures> {
  const store = [...(await storeArgs()), '--store-lease-ms', String(TAKEOVER_LEASE_MS)];
  await using owner = await startBrokerProcess(store);
  await using standby = await startStandbyBrokerProcess(store);
  // The client's own reconnect settings, as users run it: the standby holds its reconnect while no
  // broker owns the store, so its backoff does not decide when it is served again.
  const producer = new Producer({ endpoint: standby.endpoint });
  try {
    await producer.start();
    for (let i = 0; i < 1_000; i++) await producer.send({ topic: 'takeover', body: `m${i}` });
    const killedAt = performance.now();
    const servedAt = standby.waitForOutput(LISTENING, BUDGET_MS).then(() => performance.now());
    owner.child.kill('SIGKILL');
    let firstSendAt: number | undefined;
    // Bounded in time: a send fails within its request timeout, and the budget ends the loop.
    while (firstSendAt === undefined && performance.now() - killedAt < BUDGET_MS) {
      try {
        await producer.send({ topic: 'takeover', body: 'after the kill' });
        firstSendAt = performance.now();
      } catch {
        // Not yet: the standby still waits for the dead owner's lease to run out.
      }
    }
    const afterKillMs = (await servedAt) - killedAt;
    if (firstSendAt === undefined)
      throw new Error(`no send was acknowledged within ${BUDGET_MS} ms of the kill`);
    await using second = await startStandbyBrokerProcess(store);
    const stoppedAt = performance.now();
    const secondServes = second.waitForOutput(LISTENING, BUDGET_MS);
    await standby.stop();
    await secondServes;
    return {
      afterKillMs,
      firstSendAfterKillMs: firstSendAt - killedAt,
      afterStopMs: performance.now() - stoppedAt,
    };
  } finally {
    await producer.close();
  }
}

/** Messages in the store of {@link runLargeTakeover}. */
export const LARGE_STORE_MESSAGES = 200_000;

/**
 * The same kill -9, with {@link LARGE_STORE_MESSAGES} messages of 256 B stored: the standby has
 * loaded them while it stood by (it says so in its log), so taking over reads only what changed.
 * Returns ms from the kill to the standby serving.
 */
export async function runLargeTakeover(): Promise<number> {
  const store = [...(await storeArgs()), '--store-lease-ms', String(TAKEOVER_LEASE_MS)];
  await using owner = await startBrokerProcess(store);
  const producer = new Producer({ endpoint: owner.endpoint });
  try {
    await producer.start();
    const body = 'x'.repeat(256);
    for (let sent = 0; sent < LARGE_STORE_MESSAGES; sent += 1_000) {
      await Promise.all(
        Array.from({ length: 1_000 }, (_, i) => producer.send({ topic: `takeover-${i % 4}`, body })),
      );
    }
  } finally {
    await producer.close();
  }
  await using standby = await startStandbyBrokerProcess(store);
  await standby.waitForOutput(/local copy of the store loaded/, BUDGET_MS);
  const killedAt = performance.now();
  const served = standby.waitForOutput(LISTENING, BUDGET_MS);
  owner.child.kill('SIGKILL');
  await served;
  return performance.now() - killedAt;
}
