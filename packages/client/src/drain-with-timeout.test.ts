import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { drainWithTimeout, IdleWaiters } from './drain-with-timeout.js';

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('drainWithTimeout', () => {
  it('resolves true as soon as the work is idle, and clears its timer', async () => {
    let idle!: () => void;
    const draining = drainWithTimeout(new Promise<void>((resolve) => (idle = resolve)), 5_000);
    expect(vi.getTimerCount()).toBe(1);
    idle();
    await expect(draining).resolves.toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resolves false after timeoutMs when the work never gets idle', async () => {
    const draining = drainWithTimeout(new Promise(() => {}), 5_000);
    let settled = false;
    void draining.then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(4_999);
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await expect(draining).resolves.toBe(false);
  });

  it('counts a rejection as idle: nothing is left to wait for', async () => {
    await expect(drainWithTimeout(Promise.reject(new Error('failed')), 5_000)).resolves.toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('with a timeout of 0 still lets work that is idle already win', async () => {
    await expect(drainWithTimeout(Promise.resolve(), 0)).resolves.toBe(true);
    const never = drainWithTimeout(new Promise(() => {}), 0);
    await vi.advanceTimersByTimeAsync(0);
    await expect(never).resolves.toBe(false);
  });
});

describe('IdleWaiters', () => {
  it('resolves at once when idle, else at the first check that finds it idle', async () => {
    let inFlight = 2;
    const waiters = new IdleWaiters(() => inFlight === 0);
    const woken: string[] = [];
    void waiters.whenIdle().then(() => woken.push('first'));
    void waiters.whenIdle().then(() => woken.push('second'));
    inFlight = 1;
    waiters.check();
    await Promise.resolve();
    expect(woken).toEqual([]);
    inFlight = 0;
    waiters.check();
    await Promise.resolve();
    expect(woken).toEqual(['first', 'second']);
    await expect(waiters.whenIdle()).resolves.toBeUndefined();
  });

  it('wakes each waiter once', async () => {
    let inFlight = 1;
    const waiters = new IdleWaiters(() => inFlight === 0);
    const wake = vi.fn();
    void waiters.whenIdle().then(wake);
    inFlight = 0;
    waiters.check();
    waiters.check();
    await Promise.resolve();
    expect(wake).toHaveBeenCalledOnce();
  });
});
