import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FIFO_RETRY_POLICY,
  DEFAULT_MAX_RETRIES,
  DEFAULT_PUSH_RETRY_POLICY,
  type ExponentialRetryPolicy,
  retryDelayMs,
} from './retry-policy.js';

const s = 1_000;
const m = 60 * s;
const h = 60 * m;

describe('DEFAULT_PUSH_RETRY_POLICY (P3, the seeds table)', () => {
  // The seeds' table, retry number → interval since the previous failure.
  const seedsTable: [number, number][] = [
    [1, 10 * s],
    [2, 30 * s],
    [3, 1 * m],
    [4, 2 * m],
    [5, 3 * m],
    [6, 4 * m],
    [7, 5 * m],
    [8, 6 * m],
    [9, 7 * m],
    [10, 8 * m],
    [11, 9 * m],
    [12, 10 * m],
    [13, 20 * m],
    [14, 30 * m],
    [15, 1 * h],
    [16, 2 * h],
  ];

  it.each(seedsTable)('retry %i waits %i ms', (retryNumber, expectedMs) => {
    expect(retryDelayMs(DEFAULT_PUSH_RETRY_POLICY, retryNumber)).toBe(expectedMs);
  });

  it('waits 2 h for every retry after the 16th', () => {
    for (const retryNumber of [17, 18, 25, 100, 10_000]) {
      expect(retryDelayMs(DEFAULT_PUSH_RETRY_POLICY, retryNumber)).toBe(2 * h);
    }
  });

  // The seeds round this to "4 h 46 min"; the exact sum is 4 h 45 min 40 s.
  it('adds up to about 4 h 46 min over the 16 default retries', () => {
    const totalMs = seedsTable.reduce((sum, [n]) => sum + retryDelayMs(DEFAULT_PUSH_RETRY_POLICY, n), 0);
    expect(totalMs).toBe(4 * h + 45 * m + 40 * s);
  });

  it('allows 16 retries by default', () => {
    expect(DEFAULT_MAX_RETRIES).toBe(16);
    expect(DEFAULT_PUSH_RETRY_POLICY.delaysMs).toHaveLength(DEFAULT_MAX_RETRIES);
  });

  it('is frozen so no caller can change the default for everybody', () => {
    expect(Object.isFrozen(DEFAULT_PUSH_RETRY_POLICY)).toBe(true);
    expect(Object.isFrozen(DEFAULT_PUSH_RETRY_POLICY.delaysMs)).toBe(true);
  });
});

describe('DEFAULT_FIFO_RETRY_POLICY (P5)', () => {
  it('waits a fixed 3000 ms for every retry', () => {
    for (const retryNumber of [1, 2, 16, 17, 1_000]) {
      expect(retryDelayMs(DEFAULT_FIFO_RETRY_POLICY, retryNumber)).toBe(3_000);
    }
  });
});

describe('stepped policies', () => {
  it('repeats the last step', () => {
    const policy = { type: 'stepped', delaysMs: [100, 200] } as const;
    expect([1, 2, 3, 4].map((n) => retryDelayMs(policy, n))).toEqual([100, 200, 200, 200]);
  });
});

describe('exponential policies', () => {
  const policy: ExponentialRetryPolicy = {
    type: 'exponential',
    initialMs: 100,
    multiplier: 2,
    maxMs: 1_000,
    jitter: 0.2,
  };
  const middle = () => 0.5;

  it('grows by the multiplier and stops at maxMs', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(policy, n, middle))).toEqual([
      100, 200, 400, 800, 1_000, 1_000,
    ]);
  });

  it('spreads each delay within ±jitter', () => {
    expect(retryDelayMs(policy, 2, () => 0)).toBe(160);
    expect(retryDelayMs(policy, 2, () => 0.999_999)).toBe(240);
  });

  it('saturates instead of overflowing for huge retry numbers', () => {
    expect(retryDelayMs(policy, 1_000_000, middle)).toBe(1_000);
  });
});

describe('retryDelayMs input checks', () => {
  it.each([0, -1, 1.5, Number.NaN])('rejects retry number %s', (retryNumber) => {
    expect(() => retryDelayMs(DEFAULT_PUSH_RETRY_POLICY, retryNumber)).toThrow(RangeError);
  });
});
