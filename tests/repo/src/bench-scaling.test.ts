import { describe, expect, it } from 'vitest';
import { type ProcStat, parseProcStat, treeCpuTime } from '../../../bench/src/cpu-time.js';
import { parseBenchArgs } from '../../../bench/src/report/bench-args.js';
import type { CpuReading } from '../../../bench/src/scaling/capped-cluster.js';
import { CFS_PERIOD_US, cfsQuotaUs, parseCpuStat } from '../../../bench/src/scaling/cpu-cgroup.js';
import {
  formatScalingTable,
  idleFigures,
  recordScalingRun,
  type ScalingRuns,
  scalingFigures,
} from '../../../bench/src/scaling/scaling-table.js';

/**
 * `pnpm bench --scaling` starts brokers in cgroups as root and runs for minutes, so it is not part
 * of the suite; its pure parts are: the command line, the cgroup's quota, the /proc and cpu.stat
 * readings, the figures and the table's medians and ratios.
 */

describe('parseBenchArgs --scaling', () => {
  it('runs W1 and W2 on PostgreSQL with 6 queues and a cap of 0.3 CPU by default', () => {
    expect(parseBenchArgs(['--scaling'])).toEqual({
      workloads: ['w1', 'w2'],
      peers: false,
      runs: 1,
      tenants: 100_000,
      store: 'postgres',
      storeQueues: 6,
      spreadBrokers: 1,
      scaling: { cpuCap: 0.3 },
    });
  });

  it('takes --cpu-cap, --runs and --store-queues', () => {
    const args = parseBenchArgs(['--scaling', '--cpu-cap', '0.5', '--runs=3', '--store-queues', '4']);
    expect(args).toMatchObject({ runs: 3, storeQueues: 4, scaling: { cpuCap: 0.5 } });
    expect(parseBenchArgs(['--cpu-cap=1', '--scaling', '--store', 'postgres']).scaling).toEqual({
      cpuCap: 1,
    });
  });

  it('refuses what it cannot honour instead of running something else', () => {
    expect(() => parseBenchArgs(['--cpu-cap', '0.3'])).toThrow(/add --scaling/);
    expect(() => parseBenchArgs(['--scaling', '--cpu-cap', '0'])).toThrow(/--cpu-cap takes/);
    expect(() => parseBenchArgs(['--scaling', '--cpu-cap', 'half'])).toThrow(/--cpu-cap takes/);
    expect(() => parseBenchArgs(['--scaling', 'w3'])).toThrow(/W1 and W2/);
    expect(() => parseBenchArgs(['--scaling', '--peers'])).toThrow(/--peers/);
    expect(() => parseBenchArgs(['--scaling', '--store', 'lmdb'])).toThrow(/PostgreSQL/);
    expect(() => parseBenchArgs(['--scaling', '--store-queues', '2'])).toThrow(/3 or more/);
    expect(() =>
      parseBenchArgs(['--scaling', '--store', 'postgres', '--store-queues', '4', '--store-spread', '3']),
    ).toThrow(/--store-spread/);
  });
});

describe('cfsQuotaUs', () => {
  it('gives the CPU time per 100 ms period that a cap of that many CPUs allows', () => {
    expect(CFS_PERIOD_US).toBe(100_000);
    expect(cfsQuotaUs(0.3)).toBe(30_000);
    expect(cfsQuotaUs(1.5)).toBe(150_000);
    expect(cfsQuotaUs(0.3, 50_000)).toBe(15_000);
  });

  it('refuses a cap the kernel refuses (under 1 ms a period) or that is not a cap', () => {
    expect(cfsQuotaUs(0.01)).toBe(1_000);
    expect(() => cfsQuotaUs(0.005)).toThrow(RangeError);
    expect(() => cfsQuotaUs(0)).toThrow(/above 0/);
    expect(() => cfsQuotaUs(Number.NaN)).toThrow(RangeError);
  });
});

describe('parseCpuStat', () => {
  it('reads the periods, the throttled ones and the time throttled (ns to ms)', () => {
    const text = 'nr_periods 120\nnr_throttled 45\nthrottled_time 2500000000\nnr_bursts 0\nburst_time 0\n';
    expect(parseCpuStat(text)).toEqual({ periods: 120, throttledPeriods: 45, throttledMs: 2_500 });
  });
});

describe('parseProcStat and treeCpuTime', () => {
  it('reads ppid and CPU times in 10 ms ticks, whatever the command name holds', () => {
    // Fields from the state on: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime …
    const line = '4242 (node) (x)) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 30 7 3 20 0 11 0';
    expect(parseProcStat(line)).toEqual({ ppid: 17, ownMs: 2_800, reapedChildrenMs: 100 });
    expect(parseProcStat('garbage')).toBeUndefined();
  });

  it("sums a process tree: each process's own time and its reaped children's, nothing outside it", () => {
    const stat = (ppid: number, ownMs: number, reapedChildrenMs = 0): ProcStat => ({
      ppid,
      ownMs,
      reapedChildrenMs,
    });
    const stats = new Map([
      [1, stat(0, 5_000)],
      [100, stat(1, 200, 50)], // the postmaster, with backends that exited
      [101, stat(100, 30)],
      [102, stat(100, 70)],
      [103, stat(102, 1)],
      [200, stat(1, 999)], // another server
    ]);
    expect(treeCpuTime(100, stats)).toBe(351);
    expect(treeCpuTime(300, stats)).toBeNaN();
  });
});

describe('the scaling table', () => {
  const reading = (elapsedMs: number, brokerCpuMs: number[], postgresCpuMs: number): CpuReading => ({
    elapsedMs,
    brokerCpuMs,
    postgresCpuMs,
    throttling: [],
  });

  it("sums the brokers' CPU per message and gives the busiest broker's share of its cap", () => {
    const figures = scalingFigures(10_000, reading(2_000, [600, 300, 200], 400), {
      messages: 20_000,
      cpus: 0.3,
      forwarded: 5_000,
    });
    expect(figures.rate).toBe(10_000);
    expect(figures.brokersCpuUs).toBeCloseTo(55);
    expect(figures.postgresCpuUs).toBeCloseTo(20);
    expect(figures.busiestCapPercent).toBeCloseTo(100);
    expect(figures.forwardedPercent).toBeCloseTo(25);
  });

  it("gives the brokers' idle CPU, summed, per second of the window", () => {
    expect(idleFigures(reading(2_000, [20, 30, 10], 5))).toEqual({ idleCpuMsPerS: 30 });
  });

  it('prints the rows in the order the bench measures them, whatever order they were recorded in', () => {
    const runs: ScalingRuns = new Map();
    recordScalingRun(runs, 'idleAfter', '1', { idleCpuMsPerS: 20 });
    recordScalingRun(runs, 'idleBefore', '1', { idleCpuMsPerS: 35 });
    const labels = formatScalingTable(runs).map((line) => line.split(/ {2,}/)[0]);
    expect(labels.slice(0, 3)).toEqual([
      'workload',
      "brokers' CPU, idle before W1, ms per s",
      "brokers' CPU, idle after W2, ms per s",
    ]);
  });

  it('prints the median per broker count and each count ÷ one broker, beside the targets', () => {
    const runs: ScalingRuns = new Map();
    const at = (rate: number, brokersCpuUs: number) => ({
      rate,
      brokersCpuUs,
      postgresCpuUs: 20,
      forwardedPercent: 0,
      busiestCapPercent: 99,
    });
    for (const [one, two, three] of [
      [8_000, 10_000, 6_000],
      [9_000, 12_000, 7_000],
      [7_000, 11_000, 100_000],
    ] as const) {
      recordScalingRun(runs, 'w1', '1', at(one, 35));
      recordScalingRun(runs, 'w1', '2', at(two, 70));
      recordScalingRun(runs, 'w1', '3', at(three, 105));
    }
    const lines = formatScalingTable(runs);
    const [header, rate, cpu, postgres, forwarded, busiest] = lines.map((line) => line.split(/ {2,}/));
    expect(header).toEqual(['workload', '1 broker', '2 brokers', '3 brokers', '2 ÷ 1', '3 ÷ 1', 'target']);
    // Medians 8,000 / 11,000 / 7,000: the 100,000 outlier does not move them.
    expect(rate).toEqual(['W1 publish, msg/s', '8,000', '11,000', '7,000', '1.38', '0.88', '3 ÷ 1 ≥ 2.4']);
    expect(cpu).toEqual([
      "W1 brokers' CPU per message, µs",
      '35.0',
      '70.0',
      '105.0',
      '2.00',
      '3.00',
      '3 ÷ 1 ≤ 1.3',
    ]);
    expect(postgres).toEqual(["W1 PostgreSQL's CPU per message, µs", '20.0', '20.0', '20.0', '1.00', '1.00']);
    expect(forwarded).toEqual([
      'W1 messages forwarded between brokers, share',
      '0 %',
      '0 %',
      '0 %',
      '–',
      '–',
    ]);
    expect(busiest).toEqual(["W1 busiest broker's CPU, share of its cap", '99 %', '99 %', '99 %', '–', '–']);
    expect(lines[6]).toMatch(
      /^ratios: the median with N brokers ÷ the median with one \(rate: higher is better/,
    );
  });
});
