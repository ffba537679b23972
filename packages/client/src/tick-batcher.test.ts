import { afterEach, describe, expect, it, vi } from 'vitest';
import { TickBatcher } from './tick-batcher.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A batcher that records every batch it flushes. */
function recording(delayMs?: number): { batcher: TickBatcher<string>; batches: string[][] } {
  const batches: string[][] = [];
  const batcher = new TickBatcher<string>({
    flush: (items) => batches.push(items),
    ...(delayMs === undefined ? {} : { delayMs }),
  });
  return { batcher, batches };
}

describe('TickBatcher without delayMs', () => {
  it('flushes what one job added as one batch, in order, in a microtask', async () => {
    const { batcher, batches } = recording();
    // Queued before the batch's first item, so it runs before the flush does.
    void Promise.resolve().then(() => batcher.add('c'));
    batcher.add('a');
    batcher.add('b');
    expect(batches).toEqual([]);
    expect(batcher.size).toBe(2);
    await Promise.resolve();
    expect(batches).toEqual([['a', 'b', 'c']]);
    expect(batcher.size).toBe(0);
  });

  it('starts a new batch in the next tick', async () => {
    const { batcher, batches } = recording();
    batcher.add('a');
    await new Promise((resolve) => setImmediate(resolve));
    batcher.add('b');
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([['a'], ['b']]);
  });

  it('flushes at once on demand, and the scheduled flush then finds nothing', async () => {
    const { batcher, batches } = recording();
    batcher.add('a');
    batcher.flush();
    expect(batches).toEqual([['a']]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([['a']]);
  });

  it('puts an item added during a flush into the next batch', async () => {
    const batches: string[][] = [];
    const batcher: TickBatcher<string> = new TickBatcher<string>({
      flush: (items) => {
        batches.push([...items]);
        if (items.includes('a')) batcher.add('retry of a');
      },
    });
    batcher.add('a');
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([['a'], ['retry of a']]);
  });

  it('drops what clear() finds', async () => {
    const { batcher, batches } = recording();
    batcher.add('a');
    batcher.clear();
    batcher.add('b');
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([['b']]);
  });
});

describe('TickBatcher with delayMs', () => {
  it('flushes delayMs after the first item of a batch', async () => {
    vi.useFakeTimers();
    const { batcher, batches } = recording(10);
    batcher.add('a');
    await vi.advanceTimersByTimeAsync(6);
    batcher.add('b');
    await vi.advanceTimersByTimeAsync(3);
    expect(batches).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toEqual([['a', 'b']]);
    batcher.add('c');
    await vi.advanceTimersByTimeAsync(10);
    expect(batches).toEqual([['a', 'b'], ['c']]);
  });

  it('cancels its timer on flush and on clear', () => {
    vi.useFakeTimers();
    const { batcher, batches } = recording(10);
    batcher.add('a');
    batcher.flush();
    expect(vi.getTimerCount()).toBe(0);
    batcher.add('b');
    batcher.clear();
    expect(vi.getTimerCount()).toBe(0);
    expect(batches).toEqual([['a']]);
  });
});
