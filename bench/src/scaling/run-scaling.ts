import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { putGroup } from '../admin.js';
import { benchPostgresPid } from '../bench-store.js';
import type { ScalingChoice } from '../report/bench-args.js';
import { publishW1, W1_TOPIC } from '../workloads/w1-publish.js';
import { drainW2 } from '../workloads/w2-push-consume.js';
import { type CpuReading, cpuWindow, startCappedCluster } from './capped-cluster.js';
import { CpuCgroupUnavailableError, createCpuCgroup } from './cpu-cgroup.js';
import { forwardedOver } from './forwarded-messages.js';
import {
  BROKER_COUNTS,
  formatScalingTable,
  idleFigures,
  recordScalingRun,
  type ScalingRuns,
  type ScalingWorkload,
  scalingFigures,
} from './scaling-table.js';

/** Issue 42's measurement: 20,000 sends of 256 B with 500 in flight, then a push group draining them. */
export const SCALING_MESSAGES = 20_000;
const SCALING_IN_FLIGHT = 500;
const SCALING_GROUP = 'scaling';
/**
 * Before the measured round, the same round unmeasured on a topic and group of its own: a broker's
 * CPU per message over its first 20,000 includes V8 compiling its paths, and a broker of three sees
 * a third of the messages, so its paths compile later and that cost weighs on fewer messages (the
 * ratio to one broker then measures start-up, not what a cluster costs).
 */
const WARM_UP_TOPIC = 'scaling-warm-up';
/** How long the brokers' idle CPU is read for: 200 ticks of /proc's 10 ms. */
const IDLE_WINDOW_MS = 2_000;

/**
 * `pnpm bench --scaling`: for each run, 1, 2 and 3 brokers (in that order, so a run's counts see
 * the same machine) on a fresh database each of the bench's one PostgreSQL server, each broker in
 * a cgroup of its own capped at `cpuCap` CPU; PostgreSQL and the clients (this process) uncapped.
 * W1 sends {@link SCALING_MESSAGES} through one producer given every broker's endpoint, W2 drains
 * them through one push consumer given the same list, after the same round unmeasured
 * ({@link WARM_UP_TOPIC}); before and after them, the brokers' CPU while idle. Prints the table
 * of medians. Without cgroup v1's cpu controller (or root) it says so and sets a failing exit
 * code: it never runs uncapped.
 */
export async function runScalingBench({
  runs,
  storeQueues,
  scaling,
}: {
  readonly runs: number;
  readonly storeQueues: number;
  readonly scaling: ScalingChoice;
}): Promise<void> {
  const { cpuCap } = scaling;
  try {
    // Before any process starts: a machine that cannot cap is told so at once.
    await createCpuCgroup(`ricochet-bench-${process.pid}-probe`, cpuCap).remove();
  } catch (error) {
    if (!(error instanceof CpuCgroupUnavailableError)) throw error;
    console.error(`pnpm bench --scaling: cannot cap the brokers' CPU, so nothing was run: ${error.message}`);
    process.exitCode = 1;
    return;
  }
  console.log(
    `node ${process.version}, ${new Date().toISOString()}, ${runs} run(s), pnpm bench --scaling: ${BROKER_COUNTS.join(', ')} brokers with --store-spread on one PostgreSQL (one local server, fsync on, ${storeQueues} queues), each broker capped at ${cpuCap} CPU (cgroup v1); PostgreSQL and the clients uncapped; ${SCALING_MESSAGES.toLocaleString('en')} messages of 256 B, ${SCALING_IN_FLIGHT} sends in flight; load average at the start ${loadLine()}`,
  );
  const postgresPid = await benchPostgresPid();
  const table: ScalingRuns = new Map();
  for (let run = 1; run <= runs; run++) {
    for (const brokers of BROKER_COUNTS) {
      console.error(`scaling run ${run}/${runs}, ${brokers} broker(s), load average ${loadLine()}`);
      await using cluster = await startCappedCluster(brokers, storeQueues, cpuCap);
      const record = (workload: ScalingWorkload, rate: number, reading: CpuReading, forwarded: number) => {
        const figures = scalingFigures(rate, reading, {
          messages: SCALING_MESSAGES,
          cpus: cpuCap,
          forwarded,
        });
        recordScalingRun(table, workload, `${brokers}`, figures);
        // Progress on stderr, with how often each cap bit: the table on stdout is the result.
        const throttled = reading.throttling.map((t) => `${t.throttledPeriods}/${t.periods}`).join(', ');
        console.error(
          `  ${workload}: ${JSON.stringify(figures)}; periods throttled, per broker: ${throttled}`,
        );
      };
      const idle = async (when: 'idleBefore' | 'idleAfter') => {
        const { window, reading } = cpuWindow(cluster, postgresPid);
        await window.begin(cluster.first);
        await sleep(IDLE_WINDOW_MS);
        await window.end(cluster.first);
        recordScalingRun(table, when, `${brokers}`, idleFigures(reading()));
      };
      await idle('idleBefore');
      await publishW1(cluster.first, cluster.endpoints, {
        messages: SCALING_MESSAGES,
        inFlight: SCALING_IN_FLIGHT,
        topic: WARM_UP_TOPIC,
      });
      await putGroup(cluster.first.endpoint, WARM_UP_TOPIC, { startFrom: 'earliest' });
      await drainW2(cluster.first, cluster.endpoints, {
        group: WARM_UP_TOPIC,
        topic: WARM_UP_TOPIC,
        messages: SCALING_MESSAGES,
      });
      const w1 = cpuWindow(cluster, postgresPid);
      const w1Sends = forwardedOver(w1.window, cluster.endpoints, 'send');
      const w1Rate = (
        await publishW1(cluster.first, cluster.endpoints, {
          messages: SCALING_MESSAGES,
          inFlight: SCALING_IN_FLIGHT,
          window: w1Sends.window,
        })
      ).rate;
      record('w1', w1Rate, w1.reading(), w1Sends.forwarded());
      // A push group made now that starts from the first message: it drains what W1 stored.
      await putGroup(cluster.first.endpoint, SCALING_GROUP, { startFrom: 'earliest' });
      const w2 = cpuWindow(cluster, postgresPid);
      const w2Deliveries = forwardedOver(w2.window, cluster.endpoints, 'deliver');
      const w2Rate = await drainW2(cluster.first, cluster.endpoints, {
        group: SCALING_GROUP,
        topic: W1_TOPIC,
        messages: SCALING_MESSAGES,
        window: w2Deliveries.window,
      });
      record('w2', w2Rate, w2.reading(), w2Deliveries.forwarded());
      await idle('idleAfter');
    }
  }
  for (const line of formatScalingTable(table)) console.log(line);
  console.log(`load average at the end ${loadLine()}`);
}

function loadLine(): string {
  return loadavg()
    .map((load) => load.toFixed(2))
    .join(' ');
}
