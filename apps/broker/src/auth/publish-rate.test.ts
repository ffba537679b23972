import { ManualClock } from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import { PublishRateLimiter } from './publish-rate.js';

describe('PublishRateLimiter', () => {
  it('admits a second of burst, then refuses with the wait until the next message fits', () => {
    const clock = new ManualClock(0);
    const limiter = new PublishRateLimiter(clock);
    for (let i = 0; i < 10; i++) expect(limiter.take('p', 10, 1)).toEqual({ ok: true });
    expect(limiter.take('p', 10, 1)).toEqual({ ok: false, retryAfterMs: 100 });
    clock.advanceBy(50);
    expect(limiter.take('p', 10, 1)).toEqual({ ok: false, retryAfterMs: 50 });
    clock.advanceBy(50);
    expect(limiter.take('p', 10, 1)).toEqual({ ok: true });
  });

  it('holds the average rate over a long run', () => {
    const clock = new ManualClock(0);
    const limiter = new PublishRateLimiter(clock);
    let admitted = 0;
    for (let ms = 0; ms < 10_000; ms += 7) {
      clock.set(ms);
      if (limiter.take('p', 100, 3).ok) admitted += 3;
    }
    // 10 s at 100/s, plus the first second's burst.
    expect(admitted).toBeGreaterThanOrEqual(1_000);
    expect(admitted).toBeLessThanOrEqual(1_103);
  });

  it('admits a frame larger than the bucket once it is full, and makes the debt wait', () => {
    const clock = new ManualClock(0);
    const limiter = new PublishRateLimiter(clock);
    expect(limiter.take('p', 10, 50)).toEqual({ ok: true });
    // 40 messages of debt, then one more: 4.1 s at 10/s.
    expect(limiter.take('p', 10, 1)).toEqual({ ok: false, retryAfterMs: 4_100 });
    clock.advanceBy(4_100);
    expect(limiter.take('p', 10, 1)).toEqual({ ok: true });
  });

  it('keeps one bucket per principal, and forgets those a reload removed', () => {
    const clock = new ManualClock(0);
    const limiter = new PublishRateLimiter(clock);
    expect(limiter.take('a', 1, 1).ok).toBe(true);
    expect(limiter.take('a', 1, 1).ok).toBe(false);
    expect(limiter.take('b', 1, 1).ok).toBe(true);
    limiter.retainOnly(new Set(['b']));
    expect(limiter.take('a', 1, 1).ok).toBe(true);
    expect(limiter.take('b', 1, 1).ok).toBe(false);
  });

  it('rates below one per second still admit one message at a time', () => {
    const clock = new ManualClock(0);
    const limiter = new PublishRateLimiter(clock);
    expect(limiter.take('p', 0.5, 1).ok).toBe(true);
    expect(limiter.take('p', 0.5, 1)).toEqual({ ok: false, retryAfterMs: 2_000 });
  });
});
