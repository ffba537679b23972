import { describe, expect, it } from 'vitest';
import { FifoQueue } from './fifo-queue.js';

describe('FifoQueue', () => {
  it('hands items out oldest first, across compactions', () => {
    const queue = new FifoQueue<number>();
    const out: number[] = [];
    // Enough to compact several times, with pushes between the shifts.
    for (let i = 0; i < 5_000; i++) {
      queue.push(i);
      if (i % 3 !== 0) out.push(queue.shift() ?? -1);
    }
    expect(queue.length).toBe(5_000 - out.length);
    out.push(...queue.drain());
    expect(out).toEqual(Array.from({ length: 5_000 }, (_, index) => index));
    expect(queue.length).toBe(0);
    expect(queue.shift()).toBeUndefined();
  });
});
