import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FIFO_RETRY_POLICY,
  DEFAULT_MAX_RETRIES,
  DEFAULT_PUSH_RETRY_POLICY,
  type ExponentialRetryPolicy,
  retryDelayMs,
} from './retry-policy.js';
import { MAX_RETRY_DELAY_MS } from './retry-policy-validation.js';

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

  // Retry numbers this large used to cost one loop step each: 2³¹ − 1 (an ordered consumer's
  // default maximum in RocketMQ) took seconds, Number.MAX_SAFE_INTEGER would never end.
  it.each([2 ** 31 - 1, Number.MAX_SAFE_INTEGER])(
    'answers at once for retry %i, whatever the multiplier',
    (n) => {
      const flat = { ...policy, multiplier: 1 };
      const slow = { ...policy, multiplier: 1.000_001, maxMs: 1e15 };
      expect(retryDelayMs(flat, n, middle)).toBe(100);
      expect(retryDelayMs(policy, n, middle)).toBe(1_000);
      expect(retryDelayMs(slow, n, middle)).toBe(1e15);
    },
  );

  it('equals growing the delay step by step, for every policy and retry number', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 100_000 }),
        fc.double({ min: 1, max: 100, noNaN: true }),
        fc.integer({ min: 1, max: 1e9 }),
        fc.integer({ min: 1, max: 300 }),
        (initialMs, multiplier, extraMs, retryNumber) => {
          const exponential = { ...policy, initialMs, multiplier, maxMs: initialMs + extraMs, jitter: 0 };
          let stepMs = initialMs;
          for (let retry = 1; retry < retryNumber && stepMs < exponential.maxMs; retry++)
            stepMs *= multiplier;
          const expectedMs = Math.round(Math.min(stepMs, exponential.maxMs));
          // Repeated multiplication and a power may differ in the last bits: allow one part in 10¹².
          expect(Math.abs(retryDelayMs(exponential, retryNumber) - expectedMs)).toBeLessThanOrEqual(
            Math.max(1, expectedMs * 1e-12),
          );
        },
      ),
    );
  });
});

describe('retryDelayMs input checks', () => {
  it.each([0, -1, 1.5, Number.NaN])('rejects retry number %s', (retryNumber) => {
    expect(() => retryDelayMs(DEFAULT_PUSH_RETRY_POLICY, retryNumber)).toThrow(RangeError);
  });
});

describe('X3: jitter on every policy shape', () => {
  const shapes = fc.oneof(
    fc.record({
      type: fc.constant('stepped' as const),
      delaysMs: fc.array(fc.integer({ min: 0, max: MAX_RETRY_DELAY_MS }), { minLength: 1, maxLength: 20 }),
    }),
    fc.record({
      type: fc.constant('fixed' as const),
      delayMs: fc.integer({ min: 0, max: MAX_RETRY_DELAY_MS }),
    }),
    fc
      .record({
        type: fc.constant('exponential' as const),
        initialMs: fc.integer({ min: 1, max: 100_000 }),
        multiplier: fc.double({ min: 1, max: 100, noNaN: true }),
        extraMs: fc.integer({ min: 0, max: 1e8 }),
      })
      .map(({ extraMs, ...rest }) => ({ ...rest, maxMs: rest.initialMs + extraMs, jitter: 0 })),
  );

  it('draws every delay within ±jitter of the policy’s, in whole milliseconds, through the injected random', () => {
    fc.assert(
      fc.property(
        shapes,
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.integer({ min: 1, max: 40 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (shape, jitter, retryNumber, draw) => {
          const exactMs = retryDelayMs(shape, retryNumber, () => {
            throw new Error('no draw at jitter 0');
          });
          let draws = 0;
          const drawnMs = retryDelayMs({ ...shape, jitter }, retryNumber, () => {
            draws++;
            return draw;
          });
          expect(Number.isInteger(drawnMs)).toBe(true);
          expect(drawnMs).toBeGreaterThanOrEqual(Math.floor(exactMs * (1 - jitter)));
          expect(drawnMs).toBeLessThanOrEqual(Math.ceil(exactMs * (1 + jitter)));
          expect(draws).toBe(jitter === 0 ? 0 : 1);
        },
      ),
    );
  });

  it('reaches both ends of the spread: a stepped step of 1 000 ms at ±30 % is drawn from 700 to 1 300', () => {
    const policy = { type: 'stepped', delaysMs: [1_000], jitter: 0.3 } as const;
    expect(retryDelayMs(policy, 1, () => 0)).toBe(700);
    expect(retryDelayMs(policy, 1, () => 0.5)).toBe(1_000);
    expect(retryDelayMs(policy, 1, () => 0.999_999)).toBe(1_300);
    expect(retryDelayMs({ type: 'fixed', delayMs: 3_000, jitter: 0.1 }, 7, () => 0)).toBe(2_700);
  });

  it('keeps the seeds’ table exact without a jitter: no number is drawn', () => {
    const refuse = () => {
      throw new Error('drawn');
    };
    const delays = DEFAULT_PUSH_RETRY_POLICY.delaysMs.map((_, i) =>
      retryDelayMs(DEFAULT_PUSH_RETRY_POLICY, i + 1, refuse),
    );
    expect(delays).toEqual(DEFAULT_PUSH_RETRY_POLICY.delaysMs);
    expect(retryDelayMs({ ...DEFAULT_FIFO_RETRY_POLICY, jitter: 0 }, 3, refuse)).toBe(3_000);
  });
});
