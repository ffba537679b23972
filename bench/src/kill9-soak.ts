import { dlqTopicOf } from '@ricochet/protocol';
import { stopBenchStore } from './bench-store.js';
import {
  accountSoak,
  type DownInterval,
  formatSoakReport,
  type SoakObservations,
  soakFailures,
} from './soak/accounting.js';
import { RETRY_GROUP, SOAK_TOPIC, SoakLoad } from './soak/soak-load.js';
import { parseSoakOptions } from './soak/soak-options.js';
import { postgresClusterTarget, singleBrokerTarget } from './soak/soak-target.js';

/**
 * `pnpm soak [--duration <s>] [--kills <n>] [--life <ms>] [--store lmdb|postgres]`: crash safety
 * under load, as an operator would try it. Four producers send (each `send` awaited, with the producer's retries and
 * message-id reuse); a push group, a simple-consumer group and a push group that fails some
 * messages (retried after 500 ms; a poison tenth of them dead-lettered after 3 failures, then
 * redriven through the admin API and committed) consume the same topic. Meanwhile the broker is
 * killed with SIGKILL and started again on the same port and data directory after random lives.
 * With `--store postgres`, three brokers share one PostgreSQL database (a 2 s lease), the clients
 * are given all three, and each kill takes the owner down: a standby takes over, and the killed
 * broker comes back as a standby (`soak/soak-target.ts`). After `--duration` seconds sending stops,
 * the groups drain, every broker is killed one last time, and the store is read as it is stored. The figures and what fails the run are in
 * `soak/accounting.ts`; exits 1 when the run fails, and keeps the data directory then.
 */
const options = parseSoakOptions(process.argv.slice(2));
/** How long the groups may take to settle everything after sending stopped. */
const DRAIN_TIMEOUT_MS = 180_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const count = (n: number) => n.toLocaleString('en');

/** The lease on a shared store: short, so a soak sees many takeovers. */
const SOAK_LEASE_MS = 2_000;
const target =
  options.store === 'postgres'
    ? await postgresClusterTarget(SOAK_LEASE_MS, options.storeQueues)
    : await singleBrokerTarget();
const load = new SoakLoad(target.endpoints);
const downtime: DownInterval[] = [];
try {
  await load.start();
  const startedAt = performance.now();
  const endAt = startedAt + options.durationS * 1_000;
  while (downtime.length < options.maxKills) {
    const lifeMs = options.meanLifeMs * (0.5 + Math.random());
    if (performance.now() + lifeMs >= endAt) break;
    await sleep(lifeMs);
    downtime.push(await target.killServing());
    if (downtime.length % 10 === 0)
      console.log(
        `  ${downtime.length} kills, ${count(load.acknowledged.size)} acknowledged after ${((performance.now() - startedAt) / 1_000).toFixed(0)} s`,
      );
  }
  await sleep(Math.max(0, endAt - performance.now()));
  await load.stopSending();

  // Drain: every group settled everything, nothing is left in the retry group's DLQ.
  const groups = [load.push, load.simple, load.retry];
  const drainDeadline = performance.now() + DRAIN_TIMEOUT_MS;
  const unsettled = async () => {
    for (const group of groups) {
      const stats = await load.stats(group.name);
      const left = (stats.ready ?? 0) + (stats.inflight ?? 0) + (stats.waitingRetry ?? 0) + (stats.dlq ?? 0);
      if (left > 0) return true;
      for (const messageId of load.acknowledged.keys()) if (!group.offsetsById.has(messageId)) return true;
    }
    return false;
  };
  while ((await unsettled()) && performance.now() < drainDeadline) await sleep(500);
  const stats = await Promise.all(groups.map((group) => load.stats(group.name)));
  await load.stop();
  const seconds = (performance.now() - startedAt) / 1_000;

  // The final SIGKILL, then the store as it is stored.
  const deadLetterTopic = dlqTopicOf(RETRY_GROUP);
  const logs = await target.killAllAndRead([SOAK_TOPIC, deadLetterTopic]);
  const observations: SoakObservations = {
    sent: load.sent,
    acknowledged: load.acknowledged,
    stored: logs.get(SOAK_TOPIC) ?? [],
    deadLetterLogs: new Map([[deadLetterTopic, logs.get(deadLetterTopic) ?? []]]),
    groups: groups.map((group, index) => group.observation(stats[index] ?? {})),
    retries: load.retries,
    downtime,
  };
  const report = accountSoak(observations);
  for (const line of formatSoakReport(report, seconds)) console.log(line);
  console.log(
    `  sends failed after the producer's retries ${count(load.failedSends)}; dead letters stored ${count(observations.deadLetterLogs.get(deadLetterTopic)?.length ?? 0)}`,
  );
  const failures = soakFailures(report);
  console.log(failures.length === 0 ? 'PASS' : `FAIL\n  ${failures.join('\n  ')}`);
  process.exitCode = failures.length === 0 ? 0 : 1;
} finally {
  await load.stop().catch(() => {});
  // A failed run keeps its data directories: the store is the evidence.
  const kept = await target.close(process.exitCode !== 0);
  if (process.exitCode !== 0) console.log(`  data directory kept: ${kept}`);
  await stopBenchStore();
}
