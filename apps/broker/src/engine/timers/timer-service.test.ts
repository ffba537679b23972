import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemTimers } from './timer-service.js';

// Node's timers, faked: the test drives them; nothing waits on the wall clock.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('systemTimers', () => {
  it('calls back once, after the delay', () => {
    const calls: number[] = [];
    systemTimers.setTimer(100, () => calls.push(Date.now()));
    vi.advanceTimersByTime(99);
    expect(calls).toHaveLength(0);
    vi.advanceTimersByTime(1);
    expect(calls).toHaveLength(1);
    vi.advanceTimersByTime(1_000);
    expect(calls).toHaveLength(1);
  });

  it('treats a negative delay as none', () => {
    let called = false;
    systemTimers.setTimer(-5_000, () => {
      called = true;
    });
    vi.advanceTimersByTime(0);
    expect(called).toBe(true);
  });

  it('never calls back a cancelled timer, and cancelling twice is harmless', () => {
    let called = false;
    const handle = systemTimers.setTimer(10, () => {
      called = true;
    });
    handle.cancel();
    handle.cancel();
    vi.advanceTimersByTime(100);
    expect(called).toBe(false);
  });

  it('does not keep the process alive for a pending timer', () => {
    const setTimeout = vi.spyOn(globalThis, 'setTimeout');
    systemTimers.setTimer(60_000, () => {});
    const timer = setTimeout.mock.results[0]?.value as NodeJS.Timeout;
    expect(timer.hasRef()).toBe(false);
  });
});
