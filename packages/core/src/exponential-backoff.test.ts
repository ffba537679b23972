import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { ExponentialBackoff } from './exponential-backoff.js';

const noJitter = () => 0.5;

describe('ExponentialBackoff (the seeds algorithm, R2 and C1)', () => {
  it('gives 1 s, then 1.6 s, 2.56 s, … capped at 120 s', () => {
    const backoff = new ExponentialBackoff({ random: noJitter, clock: new ManualClock() });
    const delays = Array.from({ length: 14 }, () => backoff.nextDelayMs());
    expect(delays).toEqual([
      1_000, 1_600, 2_560, 4_096, 6_554, 10_486, 16_777, 26_844, 42_950, 68_719, 109_951, 120_000, 120_000,
      120_000,
    ]);
  });

  it('never jitters the first delay and keeps every later one within ±20 %', () => {
    for (const r of [0, 0.25, 0.75, 0.999_999]) {
      const backoff = new ExponentialBackoff({ random: () => r, clock: new ManualClock() });
      expect(backoff.nextDelayMs()).toBe(1_000);
      const second = backoff.nextDelayMs();
      expect(second).toBeGreaterThanOrEqual(1_280);
      expect(second).toBeLessThanOrEqual(1_920);
    }
    const low = new ExponentialBackoff({ random: () => 0, clock: new ManualClock() });
    expect([low.nextDelayMs(), low.nextDelayMs(), low.nextDelayMs()]).toEqual([1_000, 1_280, 2_048]);
  });

  it('jitters around the cap, so the cap itself is 120 s ±20 %', () => {
    const backoff = new ExponentialBackoff({ random: () => 0.999_999, clock: new ManualClock() });
    let last = 0;
    for (let i = 0; i < 30; i++) last = backoff.nextDelayMs();
    expect(last).toBe(144_000);
  });

  it('does not let jitter compound: the un-jittered backoff grows, not the jittered one', () => {
    const backoff = new ExponentialBackoff({ random: () => 0, clock: new ManualClock() });
    backoff.nextDelayMs();
    backoff.nextDelayMs();
    // 1000 × 1.6² × 0.8 = 2048, not 1000 × (1.6 × 0.8)² = 1638.
    expect(backoff.nextDelayMs()).toBe(2_048);
  });

  it('allows each attempt max(deadline, now + MIN_CONNECT_TIMEOUT)', () => {
    const clock = new ManualClock(1_000_000);
    const backoff = new ExponentialBackoff({ random: noJitter, clock });
    expect(backoff.attemptTimeoutMs()).toBe(20_000);
    backoff.nextDelayMs();
    expect(backoff.attemptTimeoutMs()).toBe(20_000);
    for (let i = 0; i < 12; i++) backoff.nextDelayMs();
    // A 120 s window is longer than MIN_CONNECT_TIMEOUT, so the attempt may use all of it.
    expect(backoff.attemptTimeoutMs()).toBe(120_000);
    clock.advanceBy(110_000);
    expect(backoff.attemptTimeoutMs()).toBe(20_000);
  });

  it('starts over after reset()', () => {
    const backoff = new ExponentialBackoff({ random: noJitter, clock: new ManualClock() });
    backoff.nextDelayMs();
    backoff.nextDelayMs();
    expect(backoff.attempts).toBe(2);
    backoff.reset();
    expect(backoff.attempts).toBe(0);
    expect(backoff.nextDelayMs()).toBe(1_000);
  });

  it('takes every parameter as an option', () => {
    const backoff = new ExponentialBackoff({
      initialMs: 10,
      multiplier: 3,
      maxMs: 50,
      jitter: 0,
      minConnectTimeoutMs: 5,
      clock: new ManualClock(),
    });
    expect([backoff.nextDelayMs(), backoff.nextDelayMs(), backoff.nextDelayMs()]).toEqual([10, 30, 50]);
    expect(backoff.attemptTimeoutMs()).toBe(50);
  });

  it('refuses settings that cannot work', () => {
    expect(() => new ExponentialBackoff({ initialMs: 0 })).toThrow(RangeError);
    expect(() => new ExponentialBackoff({ multiplier: 0.5 })).toThrow(RangeError);
    expect(() => new ExponentialBackoff({ jitter: 1 })).toThrow(RangeError);
    expect(() => new ExponentialBackoff({ maxMs: 10, initialMs: 20 })).toThrow(RangeError);
  });
});
