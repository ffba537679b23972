import type { OutcomeCounts } from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import type { GroupView } from '../../engine/index.js';
import type { RoutedQueue } from './routed-queue.js';
import { StormCounts } from './storm-counts.js';

/** A group as a queue lists it: the rule on or off, and what its window counts. */
function view(name: string, counted: OutcomeCounts | undefined): GroupView {
  return {
    name,
    config: {
      maxRetries: 3,
      retryPolicy: { type: 'fixed', delayMs: 500 },
      fifo: false,
      consumeMode: 'clustering',
      consumptionTimeoutMs: 1_000,
      startFrom: 'latest',
      ...(counted === undefined
        ? {}
        : {
            pauseOnFailures: {
              failureRatio: 0.5,
              minOutcomes: 4,
              windowMs: 1_000,
              pauseMs: 10,
              maxPauseMs: 10,
            },
          }),
    },
    stats: { ready: 0, inflight: 0, waitingRetry: 0, dlq: 0, committed: 0, topics: {} },
    pause: {
      state: 'closed',
      manuallyPaused: false,
      failureRatio: 0,
      ...(counted === undefined ? {} : { counted }),
    },
  } as GroupView;
}

/** What a queue was asked by a round, call by call. */
type Asked = string[];

/**
 * A queue holding `groups`: owned here (an engine that gives its windows and records what it is
 * told) or elsewhere (answering `describeGroup` and `listGroups`, each call noted in `asked`).
 */
function queue(
  groups: readonly GroupView[],
  owned: boolean,
  told: [string, OutcomeCounts][],
  asked: Asked = [],
): RoutedQueue {
  const windows = () =>
    new Map(groups.flatMap((group) => (group.pause?.counted ? [[group.name, group.pause.counted]] : [])));
  return {
    engine: owned
      ? {
          stormWindows: windows,
          countedElsewhere: (name: string, counts: OutcomeCounts) => told.push([name, counts]),
        }
      : undefined,
    admin: async (call: string, name?: string) => {
      asked.push(call);
      if (call === 'describeGroup') return groups.find((group) => group.name === name);
      return { items: groups, lastName: null };
    },
  } as unknown as RoutedQueue;
}

const noTimers = { setTimer: () => ({ cancel: () => {} }) };

describe('StormCounts', () => {
  it('tells each queue it owns what the other queues count, for the groups with the rule on', async () => {
    const told0: [string, OutcomeCounts][] = [];
    const told2: [string, OutcomeCounts][] = [];
    const queues = [
      queue([view('billing', { successes: 1, failures: 2 }), view('audit', undefined)], true, told0),
      queue([view('billing', { successes: 0, failures: 5 })], false, []),
      queue([view('billing', { successes: 3, failures: 0 })], true, told2),
    ];
    const counts = new StormCounts({ queues: () => queues, timers: noTimers, onError: () => {} });
    await counts.round();
    expect(told0).toEqual([['billing', { successes: 3, failures: 5 }]]);
    expect(told2).toEqual([['billing', { successes: 1, failures: 7 }]]);
  });

  it('counts a queue that does not answer as nothing, and asks nothing when no group has the rule on', async () => {
    const told: [string, OutcomeCounts][] = [];
    const silent = {
      engine: undefined,
      admin: () => Promise.reject(new Error('unreachable')),
    } as unknown as RoutedQueue;
    const counts = new StormCounts({
      queues: () => [queue([view('billing', { successes: 0, failures: 1 })], true, told), silent],
      timers: noTimers,
      onError: () => {},
    });
    await counts.round();
    expect(told).toEqual([['billing', { successes: 0, failures: 0 }]]);

    const asked: Asked = [];
    const off = new StormCounts({
      queues: () => [queue([view('audit', undefined)], true, told), queue([], false, [], asked)],
      timers: noTimers,
      onError: () => {},
    });
    await off.round();
    expect(asked).toEqual([]);
  });

  it('asks a queue owned elsewhere for the groups with the rule on by name, not for every group, while they are few', async () => {
    const plain = Array.from({ length: 1_000 }, (_, index) => view(`plain-${index}`, undefined));
    const told: [string, OutcomeCounts][] = [];
    const asked: Asked = [];
    const few = new StormCounts({
      queues: () => [
        queue([...plain, view('billing', { successes: 1, failures: 0 })], true, told),
        queue([...plain, view('billing', { successes: 2, failures: 4 })], false, [], asked),
      ],
      timers: noTimers,
      onError: () => {},
    });
    await few.round();
    expect(asked).toEqual(['describeGroup']);
    expect(told).toEqual([['billing', { successes: 2, failures: 4 }]]);

    // Many groups with the rule on: one listing costs less than a call for each.
    const ruled = Array.from({ length: 40 }, (_, index) =>
      view(`ruled-${index}`, { successes: 1, failures: 1 }),
    );
    const manyTold: [string, OutcomeCounts][] = [];
    const manyAsked: Asked = [];
    const many = new StormCounts({
      queues: () => [queue(ruled, true, manyTold), queue(ruled, false, [], manyAsked)],
      timers: noTimers,
      onError: () => {},
    });
    await many.round();
    expect(manyAsked).toEqual(['listGroups']);
    expect(manyTold).toHaveLength(40);
    expect(manyTold[0]).toEqual(['ruled-0', { successes: 1, failures: 1 }]);
  });
});
