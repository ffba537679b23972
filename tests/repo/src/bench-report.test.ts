import { describe, expect, it } from 'vitest';
import { BenchArgsError, parseBenchArgs, WORKLOADS } from '../../../bench/src/report/bench-args.js';
import { fairnessOf } from '../../../bench/src/report/fairness.js';
import {
  count,
  fixed2,
  formatSideBySide,
  median,
  type Outcome,
  type RowSpec,
  summarizeRuns,
} from '../../../bench/src/report/side-by-side.js';

/**
 * `pnpm bench` is not part of the suite (it runs for minutes and `--peers` needs nats-server and
 * RabbitMQ), but its pure parts are: the command line, the medians and the side-by-side table.
 */

describe('parseBenchArgs', () => {
  it('runs every workload but many-tenants once against ricochet and the reference by default', () => {
    expect(parseBenchArgs([])).toEqual({
      workloads: WORKLOADS.filter((name) => name !== 'many-tenants'),
      peers: false,
      runs: 1,
      tenants: 100_000,
      store: 'lmdb',
      storeQueues: 1,
      spreadBrokers: 1,
      scaling: undefined,
    });
    expect(parseBenchArgs(['many-tenants', '--tenants', '500'])).toMatchObject({
      workloads: ['many-tenants'],
      tenants: 500,
    });
  });

  it('takes --peers, --runs N and a subset of workloads in any order, kept in run order', () => {
    expect(parseBenchArgs(['W2', '--peers', 'w1', '--runs', '3'])).toEqual({
      workloads: ['w1', 'w2'],
      peers: true,
      runs: 3,
      tenants: 100_000,
      store: 'lmdb',
      storeQueues: 1,
      spreadBrokers: 1,
      scaling: undefined,
    });
    expect(parseBenchArgs(['--runs=2', 'w3']).runs).toBe(2);
    expect(parseBenchArgs(['w3', 'W2C10', 'w2']).workloads).toEqual(['w2', 'w2c10', 'w3']);
  });

  it('takes --tenants N for many-tenants, 1 to a million', () => {
    expect(parseBenchArgs(['many-tenants', '--tenants', '5000'])).toMatchObject({
      workloads: ['many-tenants'],
      tenants: 5_000,
    });
    expect(parseBenchArgs(['--tenants=20', 'Many-Tenants', 'pending']).tenants).toBe(20);
    expect(parseBenchArgs(['--tenants=20', 'pending', 'many-tenants']).workloads).toEqual([
      'pending',
      'many-tenants',
    ]);
    expect(() => parseBenchArgs(['--tenants', '0'])).toThrow(
      /--tenants takes a whole number from 1 to 1,000,000, not 0/,
    );
    expect(() => parseBenchArgs(['--tenants=1000001'])).toThrow(/--tenants takes/);
    expect(() => parseBenchArgs(['--tenants'])).toThrow(/not nothing/);
  });

  it("takes --store lmdb or postgres for ricochet's brokers, and refuses anything else", () => {
    expect(parseBenchArgs(['--store', 'postgres', 'w1']).store).toBe('postgres');
    expect(parseBenchArgs(['--store=LMDB']).store).toBe('lmdb');
    expect(() => parseBenchArgs(['--store', 'sqlite'])).toThrow(/--store takes lmdb or postgres/);
    expect(() => parseBenchArgs(['--store'])).toThrow(/--store takes/);
    expect(parseBenchArgs(['--store', 'postgres', '--store-queues', '4']).storeQueues).toBe(4);
    expect(() => parseBenchArgs(['--store-queues=4'])).toThrow(/add --store postgres/);
    expect(() => parseBenchArgs(['--store', 'postgres', '--store-queues', '65'])).toThrow(/1 to 64/);
    expect(
      parseBenchArgs(['--store', 'postgres', '--store-queues', '4', '--store-spread', '3']).spreadBrokers,
    ).toBe(3);
    expect(parseBenchArgs([]).spreadBrokers).toBe(1);
    expect(() => parseBenchArgs(['--store', 'postgres', '--store-spread', '3'])).toThrow(/--store-queues/);
    expect(() =>
      parseBenchArgs(['--store', 'postgres', '--store-queues', '4', '--store-spread', '1']),
    ).toThrow(/2 to 8/);
  });

  it('refuses an unknown word or a bad --runs instead of running nothing', () => {
    expect(() => parseBenchArgs(['--peer'])).toThrow(BenchArgsError);
    expect(() => parseBenchArgs(['w5'])).toThrow(/unknown argument w5/);
    expect(() => parseBenchArgs(['--runs'])).toThrow(/--runs takes/);
    expect(() => parseBenchArgs(['--runs', '0'])).toThrow(/--runs takes/);
    expect(() => parseBenchArgs(['--runs', '1.5'])).toThrow(/--runs takes/);
  });
});

describe('median and summarizeRuns', () => {
  it('takes the middle value, or the mean of the middle two', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('takes the median of each figure on its own', () => {
    const runs: Outcome[] = [
      { figures: { p50Ms: 1, p99Ms: 9 } },
      { figures: { p50Ms: 3, p99Ms: 5 } },
      { figures: { p50Ms: 2, p99Ms: 7 } },
    ];
    expect(summarizeRuns(runs)).toEqual({ figures: { p50Ms: 2, p99Ms: 7 } });
  });

  it('makes the cell unavailable when any run failed, rather than a median of the lucky runs', () => {
    const runs: Outcome[] = [{ figures: { rate: 10 } }, { unavailable: 'nats-server exited' }];
    expect(summarizeRuns(runs)).toEqual({ unavailable: 'nats-server exited' });
    expect(summarizeRuns([])).toBeUndefined();
  });
});

describe('fairnessOf', () => {
  it('gives the smallest and largest share in per cent, and min ÷ max', () => {
    expect(fairnessOf([30, 20, 50])).toEqual({ minSharePercent: 20, maxSharePercent: 50, minOverMax: 0.4 });
    expect(fairnessOf([7, 7, 7, 7])).toEqual({ minSharePercent: 25, maxSharePercent: 25, minOverMax: 1 });
  });

  it('counts a consumer that got nothing, and refuses no consumers or no messages', () => {
    expect(fairnessOf([0, 10])).toEqual({ minSharePercent: 0, maxSharePercent: 100, minOverMax: 0 });
    expect(() => fairnessOf([])).toThrow(RangeError);
    expect(() => fairnessOf([0, 0])).toThrow(RangeError);
  });
});

describe('formatSideBySide', () => {
  const throughput: RowSpec = {
    label: 'W2 push consume, msg/s',
    measures: [{ key: 'rate', format: count }],
    ratio: { key: 'rate', better: 'higher' },
    target: '≥ 0.85 × ref',
  };
  const latency: RowSpec = {
    label: 'W3 latency, p50 / p99 ms',
    measures: [
      { key: 'p50Ms', format: fixed2 },
      { key: 'p99Ms', format: fixed2 },
    ],
    ratio: { key: 'p99Ms', better: 'lower' },
  };

  it('prints every system side by side with ricochet ÷ each other system, and the medians', () => {
    const lines = formatSideBySide(
      [
        {
          spec: throughput,
          runs: {
            ricochet: [
              { figures: { rate: 30_000 } },
              { figures: { rate: 36_000 } },
              { figures: { rate: 99_000 } },
            ],
            reference: [
              { figures: { rate: 60_000 } },
              { figures: { rate: 40_000 } },
              { figures: { rate: 50_000 } },
            ],
            jetstream: [
              { figures: { rate: 20_000 } },
              { figures: { rate: 18_000 } },
              { figures: { rate: 24_000 } },
            ],
            rabbitmq: [
              { figures: { rate: 45_000 } },
              { figures: { rate: 45_000 } },
              { figures: { rate: 45_000 } },
            ],
          },
        },
        {
          spec: latency,
          runs: {
            ricochet: [{ figures: { p50Ms: 0.4, p99Ms: 3 } }],
            reference: [{ figures: { p50Ms: 0.2, p99Ms: 1.5 } }],
            jetstream: [{ figures: { p50Ms: 0.5, p99Ms: 6 } }],
            rabbitmq: [{ figures: { p50Ms: 1, p99Ms: 4 } }],
          },
        },
      ],
      ['ricochet', 'reference', 'jetstream', 'rabbitmq'],
    );
    const [header, w2, w3] = lines.map((line) => line.split(/ {2,}/));
    expect(header).toEqual([
      'workload',
      'ricochet',
      'reference',
      'JetStream',
      'RabbitMQ QQ',
      'ricochet÷ref',
      'ricochet÷JetStream',
      'ricochet÷RabbitMQ QQ',
      'target',
    ]);
    expect(w2).toEqual([
      'W2 push consume, msg/s',
      '36,000',
      '50,000',
      '20,000',
      '45,000',
      '0.72',
      '1.80',
      '0.80',
      '≥ 0.85 × ref',
    ]);
    expect(w3).toEqual([
      'W3 latency, p50 / p99 ms',
      '0.40 / 3.00',
      '0.20 / 1.50',
      '0.50 / 6.00',
      '1.00 / 4.00',
      '2.00',
      '0.50',
      '0.75',
    ]);
    expect(lines[3]).toBe(
      "ratios: ricochet's figure ÷ the other's (rate: higher is better, p99Ms: lower is better)",
    );
    // Columns line up: the last ratio column ends at the same place on every line.
    const end = (line: string | undefined, text: string) => (line ?? '').indexOf(text) + text.length;
    expect(end(lines[1], '0.80')).toBe(end(lines[0], 'ricochet÷RabbitMQ QQ'));
    expect(end(lines[2], '0.75')).toBe(end(lines[0], 'ricochet÷RabbitMQ QQ'));
  });

  it('never drops a system that has no figures: it says unavailable or n/a, and why, below', () => {
    const lines = formatSideBySide(
      [
        {
          spec: throughput,
          runs: {
            ricochet: [{ figures: { rate: 30_000 } }],
            reference: [{ figures: { rate: 50_000 } }],
            jetstream: [{ unavailable: 'nats-server is missing and installing nats-server needs root' }],
            rabbitmq: [{ notApplicable: 'no batched pull' }],
          },
        },
      ],
      ['ricochet', 'reference', 'jetstream', 'rabbitmq'],
    );
    expect(lines[1]?.split(/ {2,}/)).toEqual([
      'W2 push consume, msg/s',
      '30,000',
      '50,000',
      'unavailable',
      'n/a',
      '0.60',
      '–',
      '–',
      '≥ 0.85 × ref',
    ]);
    expect(lines).toContain('notes:');
    expect(lines).toContain(
      '  W2 push consume, msg/s, JetStream: unavailable: nats-server is missing and installing nats-server needs root',
    );
    expect(lines).toContain('  W2 push consume, msg/s, RabbitMQ QQ: n/a: no batched pull');
  });

  it('without peers shows ricochet and the reference only', () => {
    const lines = formatSideBySide(
      [
        {
          spec: throughput,
          runs: { ricochet: [{ figures: { rate: 1_000 } }], reference: [{ figures: { rate: 2_000 } }] },
        },
      ],
      ['ricochet', 'reference'],
    );
    expect(lines[0]?.split(/ {2,}/)).toEqual(['workload', 'ricochet', 'reference', 'ricochet÷ref', 'target']);
    expect(lines[1]?.split(/ {2,}/)).toEqual([
      'W2 push consume, msg/s',
      '1,000',
      '2,000',
      '0.50',
      '≥ 0.85 × ref',
    ]);
  });

  it('shows a dash for a figure a system has none of (the reference has no broker CPU)', () => {
    const withCpu: RowSpec = {
      label: 'W1 via gRPC, msg/s / broker CPU µs',
      measures: [
        { key: 'rate', format: count },
        { key: 'brokerCpuUs', format: count },
      ],
      ratio: { key: 'rate', better: 'higher' },
    };
    const lines = formatSideBySide(
      [
        {
          spec: withCpu,
          runs: {
            ricochet: [{ figures: { rate: 1_000, brokerCpuUs: 120 } }],
            reference: [{ figures: { rate: 2_000 } }],
          },
        },
      ],
      ['ricochet', 'reference'],
    );
    expect(lines[1]?.split(/ {2,}/)).toEqual([
      'W1 via gRPC, msg/s / broker CPU µs',
      '1,000 / 120',
      '2,000 / –',
      '0.50',
    ]);
  });
});
