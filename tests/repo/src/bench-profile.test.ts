import { describe, expect, it } from 'vitest';
import {
  type CpuProfile,
  frameName,
  summarizeCpuProfile,
  summarizeHeapProfile,
} from '../../../bench/src/profile/cpu-profile-summary.js';
import {
  PROFILED_WORKLOADS,
  ProfileArgsError,
  parseProfileArgs,
} from '../../../bench/src/profile/profile-args.js';

/** `pnpm bench:profile` runs for a minute against a real broker; its pure parts are checked here. */

const frame = (functionName: string, url = '', lineNumber = 0) => ({ functionName, url, lineNumber });

/**
 * root → (idle); root → handle → encode; root → (garbage collector). Samples every 1 ms: two
 * idle, three in encode, one in handle, one GC, one idle, two in handle.
 */
const PROFILE: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 3, 5] },
    { id: 2, callFrame: frame('(idle)') },
    {
      id: 3,
      callFrame: frame('handle', 'file:///repo/apps/broker/dist/engine/settlement.js', 17),
      children: [4],
    },
    {
      id: 4,
      callFrame: frame(
        'encode',
        'file:///repo/node_modules/.pnpm/msgpackr@1.12.1/node_modules/msgpackr/pack.js',
        257,
      ),
    },
    { id: 5, callFrame: frame('(garbage collector)') },
  ],
  startTime: 0,
  endTime: 10_000,
  samples: [2, 2, 4, 4, 4, 3, 5, 2, 3, 3],
  timeDeltas: [1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000],
};

describe('summarizeCpuProfile', () => {
  it('shares samples by the running function and by every function on the stack', () => {
    const summary = summarizeCpuProfile(PROFILE);
    expect(summary).toMatchObject({ spanMs: 10, samples: 10, idleShare: 0.3, gcShare: 0.1 });
    expect(summary.self).toEqual([
      { name: 'encode msgpackr/pack.js:258', share: 0.3 },
      { name: 'handle apps/broker/dist/engine/settlement.js:18', share: 0.3 },
      { name: '(garbage collector)', share: 0.1 },
    ]);
    expect(summary.inclusive[0]).toEqual({
      name: 'handle apps/broker/dist/engine/settlement.js:18',
      share: 0.6,
    });
  });

  it('measures the stretches between idle samples', () => {
    const summary = summarizeCpuProfile(PROFILE);
    // Busy from 3 ms to 7 ms (five samples, one interval each), then 9 ms to 10 ms (two).
    expect(summary.longestBusyMs).toBe(5);
    expect(summary.busyRuns).toEqual([
      { atLeastMs: 1, count: 2 },
      { atLeastMs: 2, count: 2 },
      { atLeastMs: 5, count: 1 },
      { atLeastMs: 10, count: 0 },
      { atLeastMs: 20, count: 0 },
    ]);
  });

  it('names frames by function, package path and line, node internals as they are', () => {
    expect(frameName(frame('', 'node:internal/timers', 437))).toBe('(anonymous) node:internal/timers:438');
    expect(frameName(frame('(program)'))).toBe('(program)');
  });
});

describe('summarizeHeapProfile', () => {
  it('shares the sampled bytes by the allocating function', () => {
    const summary = summarizeHeapProfile({
      head: {
        callFrame: frame('(root)'),
        selfSize: 0,
        children: [
          { callFrame: frame('a', 'file:///repo/packages/core/dist/x.js', 0), selfSize: 300, children: [] },
          {
            callFrame: frame('b', 'file:///repo/packages/core/dist/y.js', 4),
            selfSize: 100,
            children: [
              {
                callFrame: frame('a', 'file:///repo/packages/core/dist/x.js', 0),
                selfSize: 100,
                children: [],
              },
            ],
          },
        ],
      },
    });
    expect(summary).toEqual({
      sampledBytes: 500,
      self: [
        { name: 'a packages/core/dist/x.js:1', share: 0.8 },
        { name: 'b packages/core/dist/y.js:5', share: 0.2 },
      ],
    });
  });
});

describe('parseProfileArgs', () => {
  it('takes one workload, --heap and --top N', () => {
    const embedded = { store: 'lmdb', storeQueues: 1, spreadBrokers: 1 };
    expect(parseProfileArgs(['W3'])).toEqual({ workload: 'w3', heap: false, top: 25, ...embedded });
    expect(parseProfileArgs(['--heap', 'w2', '--top', '5'])).toEqual({
      workload: 'w2',
      heap: true,
      top: 5,
      ...embedded,
    });
    expect(parseProfileArgs(['--top=40', 'w4']).top).toBe(40);
    expect(parseProfileArgs(['w1', '--store', 'Postgres']).store).toBe('postgres');
    expect(parseProfileArgs(['--store=postgres', 'w2']).store).toBe('postgres');
    // A spread cluster, every broker of it profiled.
    expect(
      parseProfileArgs(['w1', '--store', 'postgres', '--store-queues', '6', '--store-spread=3']),
    ).toMatchObject({
      store: 'postgres',
      storeQueues: 6,
      spreadBrokers: 3,
    });
    expect(PROFILED_WORKLOADS).toEqual([
      'w1',
      'w2',
      'w2c10',
      'w2s',
      'w3',
      'w4',
      'w1-grpc',
      'w2s-grpc',
      'w1-grpc-raw',
      'w2s-grpc-raw',
      'idle',
    ]);
    // No client at all: what the brokers spend doing nothing.
    expect(
      parseProfileArgs(['idle', '--store', 'postgres', '--store-queues', '4', '--store-spread', '3']),
    ).toMatchObject({ workload: 'idle', storeQueues: 4, spreadBrokers: 3 });
  });

  it.each([
    [[]],
    [['w2', 'w3']],
    [['w5']],
    [['w2', '--store', 'sqlite']],
    [['w2', '--top', '0']],
    [['w2', '--runs', '3']],
    [['w2', '--store-queues', '4']],
    [['w2', '--store', 'postgres', '--store-spread', '3']],
  ])('refuses %j', (argv) => {
    expect(() => parseProfileArgs(argv)).toThrow(ProfileArgsError);
  });
});
