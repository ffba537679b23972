import { describe, expect, it } from 'vitest';
import { DELAY_LEVELS_MS, delayLevelToMs } from './delay-levels.js';

describe('DELAY_LEVELS_MS (T1)', () => {
  it("equals RocketMQ's 18 levels, 1s … 2h", () => {
    const s = 1_000;
    const m = 60 * s;
    expect(DELAY_LEVELS_MS).toEqual([
      1 * s,
      5 * s,
      10 * s,
      30 * s,
      1 * m,
      2 * m,
      3 * m,
      4 * m,
      5 * m,
      6 * m,
      7 * m,
      8 * m,
      9 * m,
      10 * m,
      20 * m,
      30 * m,
      60 * m,
      120 * m,
    ]);
  });

  it('maps levels 1–18 and nothing else', () => {
    expect(delayLevelToMs(1)).toBe(1_000);
    expect(delayLevelToMs(18)).toBe(7_200_000);
    for (const level of [0, 19, -1, 1.5]) expect(delayLevelToMs(level)).toBeUndefined();
  });
});
