import {
  betterLegend,
  count,
  formatTable,
  type Outcome,
  type Row,
  type RowSpec,
} from '../report/side-by-side.js';
import type { CpuReading } from './capped-cluster.js';

/** The broker counts `pnpm bench --scaling` compares, each on a database of its own. */
export const BROKER_COUNTS = [1, 2, 3] as const;
/** A broker count as the key of its column. */
export type BrokerCountKey = `${(typeof BROKER_COUNTS)[number]}`;

/**
 * What the scaling bench measures on each cluster, in order: `idleBefore`, the brokers doing
 * nothing right after they spread the queues (their background work: lease renewals, the warm
 * copies of the queues each stands by for, what is left of starting); W1 sends; W2 drains what W1
 * sent; `idleAfter`, the brokers doing nothing again, settled.
 */
export type ScalingWorkload = 'idleBefore' | 'w1' | 'w2' | 'idleAfter';

const fixed1 = (n: number) => n.toFixed(1);
const percent = (n: number) => `${n.toFixed(0)} %`;

/** Issue 42's targets, three brokers ÷ one, each capped at 0.3 CPU. */
const RATE_TARGET = '3 ÷ 1 ≥ 2.4';
const CPU_TARGET = '3 ÷ 1 ≤ 1.3';

function rowsOf(workload: string): readonly RowSpec[] {
  return [
    {
      label: `${workload}, msg/s`,
      measures: [{ key: 'rate', format: count }],
      ratio: { key: 'rate', better: 'higher' },
      target: RATE_TARGET,
    },
    {
      label: `${workload.split(' ')[0]} brokers' CPU per message, µs`,
      measures: [{ key: 'brokersCpuUs', format: fixed1 }],
      ratio: { key: 'brokersCpuUs', better: 'lower' },
      target: CPU_TARGET,
    },
    {
      label: `${workload.split(' ')[0]} PostgreSQL's CPU per message, µs`,
      measures: [{ key: 'postgresCpuUs', format: fixed1 }],
      ratio: { key: 'postgresCpuUs', better: 'lower' },
    },
    {
      // 0 % when the clients send to (and take from) each queue's owner; forwarding costs a hop.
      label: `${workload.split(' ')[0]} messages forwarded between brokers, share`,
      measures: [{ key: 'forwardedPercent', format: percent }],
    },
    {
      // 100 %: the busiest broker used its whole cap, so the cap bounds the rate.
      label: `${workload.split(' ')[0]} busiest broker's CPU, share of its cap`,
      measures: [{ key: 'busiestCapPercent', format: percent }],
    },
  ];
}

function idleRow(when: string): RowSpec {
  return {
    // Counted in the per-message figures too, for as long as a workload runs.
    label: `brokers' CPU, ${when}, ms per s`,
    measures: [{ key: 'idleCpuMsPerS', format: fixed1 }],
    ratio: { key: 'idleCpuMsPerS', better: 'lower' },
  };
}

/** The table's rows, per workload in the order they print. */
export const SCALING_ROWS: Readonly<Record<ScalingWorkload, readonly RowSpec[]>> = {
  idleBefore: [idleRow('idle before W1')],
  w1: rowsOf('W1 publish'),
  w2: rowsOf('W2 push consume + ack'),
  idleAfter: [idleRow('idle after W2')],
};

/**
 * One run's figures for one workload and broker count: its rate, the brokers' CPU per message
 * (summed over the broker processes), PostgreSQL's, the busiest broker's CPU over the window as a
 * share of its cap of `cpus`, and the share of the messages the brokers forwarded between them.
 */
export function scalingFigures(
  rate: number,
  reading: CpuReading,
  {
    messages,
    cpus,
    forwarded,
  }: { readonly messages: number; readonly cpus: number; readonly forwarded: number },
): Readonly<Record<string, number>> {
  const perMessageUs = (cpuMs: number) => (cpuMs * 1_000) / messages;
  return {
    rate,
    brokersCpuUs: perMessageUs(reading.brokerCpuMs.reduce((sum, ms) => sum + ms, 0)),
    postgresCpuUs: perMessageUs(reading.postgresCpuMs),
    busiestCapPercent: (Math.max(...reading.brokerCpuMs) / (reading.elapsedMs * cpus)) * 100,
    forwardedPercent: (forwarded / messages) * 100,
  };
}

/** The brokers' CPU time while idle, summed over the broker processes, per second of the window. */
export function idleFigures(reading: CpuReading): Readonly<Record<string, number>> {
  const cpuMs = reading.brokerCpuMs.reduce((sum, ms) => sum + ms, 0);
  return { idleCpuMsPerS: (cpuMs * 1_000) / reading.elapsedMs };
}

/** Every run's outcome, per row and broker count. */
export type ScalingRuns = Map<RowSpec, Partial<Record<BrokerCountKey, Outcome[]>>>;

/** Record one run's figures of `workload` with `brokers` brokers on each of that workload's rows. */
export function recordScalingRun(
  runs: ScalingRuns,
  workload: ScalingWorkload,
  brokers: BrokerCountKey,
  figures: Readonly<Record<string, number>>,
): void {
  for (const spec of SCALING_ROWS[workload]) {
    const row = runs.get(spec) ?? {};
    runs.set(spec, row);
    row[brokers] = [...(row[brokers] ?? []), { figures }];
  }
}

/**
 * The scaling table: per row, each broker count's median over the runs, then each count ÷ one
 * broker (of the medians), then issue 42's target.
 */
export function formatScalingTable(runs: ScalingRuns): string[] {
  const rows = Object.values(SCALING_ROWS).flatMap((specs) =>
    specs.flatMap((spec): Row<BrokerCountKey>[] => {
      const byCount = runs.get(spec);
      return byCount ? [{ spec, runs: byCount }] : [];
    }),
  );
  const keys = BROKER_COUNTS.map((brokers): BrokerCountKey => `${brokers}`);
  return formatTable(rows, {
    figures: keys.map((key) => ({ key, label: key === '1' ? '1 broker' : `${key} brokers` })),
    ratios: keys.slice(1).map((key) => ({ label: `${key} ÷ 1`, numerator: key, denominator: '1' })),
    legend: `ratios: the median with N brokers ÷ the median with one (${betterLegend(rows)})`,
  });
}
