import { DEFAULT_PUSH_RETRY_POLICY } from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import { formatDuration, MAX_DRAWN_ATTEMPTS, retrySchedule } from './retry-schedule';

describe('retrySchedule', () => {
  it('adds up a stepped policy, repeating its last step (P3)', () => {
    expect(retrySchedule({ type: 'stepped', delaysMs: [100, 200] }, 3)).toEqual([
      { attempt: 1, atMs: 0, delayMs: 0, spreadMs: 0 },
      { attempt: 2, atMs: 100, delayMs: 100, spreadMs: 0 },
      { attempt: 3, atMs: 300, delayMs: 200, spreadMs: 0 },
      { attempt: 4, atMs: 500, delayMs: 200, spreadMs: 0 },
    ]);
  });

  it('draws exponential jitter at its midpoint and reports its spread', () => {
    const schedule = retrySchedule(
      { type: 'exponential', initialMs: 1_000, multiplier: 2, maxMs: 3_000, jitter: 0.1 },
      3,
    );
    expect(schedule.map((attempt) => [attempt.delayMs, attempt.spreadMs])).toEqual([
      [0, 0],
      [1_000, 100],
      [2_000, 200],
      [3_000, 300],
    ]);
  });

  it('reports a stepped or fixed policy’s jitter as its spread (X3)', () => {
    const schedule = retrySchedule({ type: 'stepped', delaysMs: [1_000, 2_000], jitter: 0.25 }, 2);
    expect(schedule.map((attempt) => attempt.spreadMs)).toEqual([0, 250, 500]);
  });

  it('follows the default push table: the 17th delivery comes about 4 h 46 min after the first', () => {
    const schedule = retrySchedule(DEFAULT_PUSH_RETRY_POLICY, 16);
    expect(schedule).toHaveLength(17);
    expect(formatDuration(schedule.at(-1)?.atMs ?? 0)).toBe('4 h 46 min');
  });

  it('draws a bounded number of attempts for a group with many retries', () => {
    expect(retrySchedule({ type: 'fixed', delayMs: 3_000 }, 1_000)).toHaveLength(MAX_DRAWN_ATTEMPTS);
  });
});
