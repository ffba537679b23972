import { describe, expect, it } from 'vitest';
import { ResetBudget } from './http2-reset-budget.js';

describe('ResetBudget: the streams a client may reset (rapid reset)', () => {
  it('lets a burst through, then refuses until time has earned more, never past the burst', () => {
    let nowMs = 0;
    const budget = new ResetBudget({ burst: 3, perSecond: 2, now: () => nowMs });
    expect([budget.take(), budget.take(), budget.take(), budget.take()]).toEqual([true, true, true, false]);
    // Half a second earns one reset at 2 a second; a quarter more earns half of one: not enough.
    nowMs = 500;
    expect(budget.take()).toBe(true);
    nowMs = 750;
    expect(budget.take()).toBe(false);
    nowMs = 1_000;
    expect(budget.take()).toBe(true);
    // An hour idle refills the burst, not an hour's worth.
    nowMs = 3_601_000;
    expect([budget.take(), budget.take(), budget.take(), budget.take()]).toEqual([true, true, true, false]);
  });
});
