import { useBenchStore } from '../bench-store.js';
import { cpuTimeOf, processTreeCpuTimeOf } from '../cpu-time.js';
import type { MeasuredWindow } from '../measured-window.js';
import { type BenchProcess, everyBrokerOf, startBrokerProcess } from '../processes.js';
import { type CpuCgroup, type CpuThrottling, createCpuCgroup } from './cpu-cgroup.js';

/** Brokers spreading one fresh PostgreSQL database's queues, each in a CPU-capped cgroup of its own. */
export interface CappedCluster extends AsyncDisposable {
  /** The first broker, with the others as its spread peers (the handle that stops them all). */
  readonly first: BenchProcess & { readonly endpoint: string };
  /** Every broker's WebSocket endpoint, the first first: the list an operator gives every client. */
  readonly endpoints: readonly string[];
  /** Each broker's cgroup, in the order of {@link endpoints}. */
  readonly cgroups: readonly CpuCgroup[];
  /** Stop every broker, then remove their cgroups. */
  stop(): Promise<void>;
}

/**
 * Start `brokers` brokers with `--store-spread` on a fresh database of the bench's PostgreSQL,
 * split into `storeQueues` queues (one broker spreads them over itself, so every count runs the
 * same flags), wait until each owns its share, and move each into a cgroup of its own capped at
 * `cpus` CPU. The caps apply from then on: starting and loading run uncapped, which is not what is
 * measured and would only make the bench slower. The cgroups are named after this process's pid.
 */
export async function startCappedCluster(
  brokers: number,
  storeQueues: number,
  cpus: number,
): Promise<CappedCluster> {
  useBenchStore({ store: 'postgres', storeQueues, spreadBrokers: brokers, spread: true });
  const first = await startBrokerProcess();
  const all = everyBrokerOf(first);
  const cgroups: CpuCgroup[] = [];
  const stop = async () => {
    await first.stop();
    await Promise.all(cgroups.map((cgroup) => cgroup.remove()));
  };
  try {
    for (const [index, broker] of all.entries()) {
      const cgroup = createCpuCgroup(`ricochet-bench-${process.pid}-${brokers}-${index + 1}`, cpus);
      cgroups.push(cgroup);
      cgroup.add(broker.child.pid ?? 0);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    first,
    endpoints: [first.endpoint, ...all.slice(1).map((peer) => peer.banner)],
    cgroups,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** What a {@link cpuWindow} saw between its `begin` and `end`. */
export interface CpuReading {
  readonly elapsedMs: number;
  /** Each broker's CPU time, in the order of the cluster's endpoints. */
  readonly brokerCpuMs: readonly number[];
  /** The PostgreSQL server's, every backend included. */
  readonly postgresCpuMs: number;
  /** Each broker's cgroup's throttling over the window. */
  readonly throttling: readonly CpuThrottling[];
}

/**
 * A measured window over a capped cluster: each broker's CPU time (Linux /proc), the PostgreSQL
 * server's (its postmaster `postgresPid` and every process below it) and each cgroup's throttling,
 * read right before and right after the measured work.
 */
export function cpuWindow(
  cluster: CappedCluster,
  postgresPid: number,
): { readonly window: MeasuredWindow; reading(): CpuReading } {
  const sample = () => ({
    atMs: performance.now(),
    brokerCpuMs: everyBrokerOf(cluster.first).map((broker) => cpuTimeOf(broker.child.pid ?? 0)),
    postgresCpuMs: processTreeCpuTimeOf(postgresPid),
    throttling: cluster.cgroups.map((cgroup) => cgroup.throttling()),
  });
  let begun: ReturnType<typeof sample> | undefined;
  let reading: CpuReading | undefined;
  const window: MeasuredWindow = {
    async begin() {
      begun = sample();
    },
    async end() {
      const ended = sample();
      if (begun === undefined) throw new Error('the measured window ended before it began');
      const from = begun;
      reading = {
        elapsedMs: ended.atMs - from.atMs,
        brokerCpuMs: ended.brokerCpuMs.map((ms, index) => ms - (from.brokerCpuMs[index] ?? Number.NaN)),
        postgresCpuMs: ended.postgresCpuMs - from.postgresCpuMs,
        throttling: ended.throttling.map((after, index) => {
          const before = from.throttling[index];
          return {
            periods: after.periods - (before?.periods ?? Number.NaN),
            throttledPeriods: after.throttledPeriods - (before?.throttledPeriods ?? Number.NaN),
            throttledMs: after.throttledMs - (before?.throttledMs ?? Number.NaN),
          };
        }),
      };
    },
  };
  return {
    window,
    reading: () => {
      if (reading === undefined) throw new Error('the measured window never closed');
      return reading;
    },
  };
}
