import { describe, expect, it } from 'vitest';
import { DEFAULT_HANDOVER_BACKOFF, handoverRetryDelayMs } from './handover-backoff.js';
import { seededRandom } from './random.js';

const noJitter = () => 0.5;

describe('handoverRetryDelayMs (retries through a handover)', () => {
  it('starts at 25 ms and doubles up to the 1 s cap', () => {
    const delays = Array.from({ length: 9 }, (_, i) => handoverRetryDelayMs(i + 1, noJitter));
    expect(delays).toEqual([25, 50, 100, 200, 400, 800, 1_000, 1_000, 1_000]);
  });

  it('keeps every delay within ±20 % of its base, the cap included', () => {
    expect(handoverRetryDelayMs(1, () => 0)).toBe(20);
    expect(handoverRetryDelayMs(1, () => 0.999_999)).toBe(30);
    expect(handoverRetryDelayMs(20, () => 0)).toBe(800);
    expect(handoverRetryDelayMs(20, () => 0.999_999)).toBe(1_200);
    const random = seededRandom(7);
    for (let retry = 1; retry <= 200; retry++) {
      const base = Math.min(25 * 2 ** (retry - 1), 1_000);
      const delay = handoverRetryDelayMs(retry, random);
      expect(delay).toBeGreaterThanOrEqual(Math.floor(base * 0.8));
      expect(delay).toBeLessThanOrEqual(Math.ceil(base * 1.2));
    }
  });

  it('stays finite for any retry number', () => {
    expect(handoverRetryDelayMs(Number.MAX_SAFE_INTEGER, noJitter)).toBe(1_000);
  });

  it('takes other settings, and a fixed delay with multiplier 1', () => {
    const options = { initialMs: 10, multiplier: 3, maxMs: 200, jitter: 0 };
    expect([1, 2, 3, 4, 5].map((n) => handoverRetryDelayMs(n, noJitter, options))).toEqual([
      10, 30, 90, 200, 200,
    ]);
    expect(handoverRetryDelayMs(9, noJitter, { multiplier: 1 })).toBe(DEFAULT_HANDOVER_BACKOFF.initialMs);
  });

  it('never waits less than 1 ms', () => {
    expect(handoverRetryDelayMs(1, () => 0, { initialMs: 0.5, maxMs: 1, jitter: 0.5 })).toBe(1);
  });

  it('refuses a retry number below 1 and settings out of range', () => {
    expect(() => handoverRetryDelayMs(0, noJitter)).toThrow(RangeError);
    expect(() => handoverRetryDelayMs(1.5, noJitter)).toThrow(RangeError);
    expect(() => handoverRetryDelayMs(1, noJitter, { initialMs: 0 })).toThrow(RangeError);
    expect(() => handoverRetryDelayMs(1, noJitter, { maxMs: 10 })).toThrow(RangeError);
    expect(() => handoverRetryDelayMs(1, noJitter, { multiplier: 0.5 })).toThrow(RangeError);
    expect(() => handoverRetryDelayMs(1, noJitter, { jitter: 1 })).toThrow(RangeError);
  });
});
