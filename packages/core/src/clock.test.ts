import { describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from './clock.js';

describe('ManualClock', () => {
  it('moves only when told to', () => {
    const clock = new ManualClock(5);
    expect(clock.now()).toBe(5);
    clock.advanceBy(10);
    expect(clock.now()).toBe(15);
    clock.set(100);
    expect(clock.now()).toBe(100);
  });

  it('never runs backwards', () => {
    const clock = new ManualClock(100);
    expect(() => clock.advanceBy(-1)).toThrow(RangeError);
    expect(() => clock.set(99)).toThrow(RangeError);
    expect(clock.now()).toBe(100);
  });
});

describe('systemClock', () => {
  it('reads the wall clock', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
