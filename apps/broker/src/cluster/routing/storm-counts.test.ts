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

/** A queue listing `groups`; owned here (with an engine that records what it is told) or elsewhere. */
function queue(groups: readonly GroupView[], owned: boolean, told: [string, OutcomeCounts][]): RoutedQueue {
  return {
    engine: owned
      ? { countedElsewhere: (name: string, counts: OutcomeCounts) => told.push([name, counts]) }
      : undefined,
    // The only admin call a round makes is listGroups.
    admin: async () => ({ items: groups, lastName: null }),
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

    let asked = 0;
    const remote = {
      engine: undefined,
      admin: async () => {
        asked++;
        return { items: [], lastName: null };
      },
    };
    const off = new StormCounts({
      queues: () => [queue([view('audit', undefined)], true, told), remote as unknown as RoutedQueue],
      timers: noTimers,
      onError: () => {},
    });
    await off.round();
    expect(asked).toBe(0);
  });
});
