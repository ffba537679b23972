import { describe, expect, it } from 'vitest';
import { batchByteLimit, MAX_BATCH_BYTES, takeBatch } from './send-batch.js';

const items = (...sizes: number[]) =>
  sizes.map((encodedBytesEstimate, index) => ({ index, encodedBytesEstimate }));

describe('takeBatch', () => {
  it('takes items in order up to the message count', () => {
    const queue = items(1, 1, 1, 1, 1);
    expect(takeBatch(queue, 3, 100).map((item) => item.index)).toEqual([0, 1, 2]);
    expect(queue.map((item) => item.index)).toEqual([3, 4]);
  });

  it('stops before the byte budget is passed', () => {
    const queue = items(40, 40, 40);
    expect(takeBatch(queue, 10, 100).map((item) => item.index)).toEqual([0, 1]);
    expect(takeBatch(queue, 10, 100).map((item) => item.index)).toEqual([2]);
    expect(queue).toEqual([]);
  });

  it('sends an item larger than the budget alone rather than never', () => {
    const queue = items(500, 10);
    expect(takeBatch(queue, 10, 100).map((item) => item.index)).toEqual([0]);
    expect(takeBatch(queue, 10, 100).map((item) => item.index)).toEqual([1]);
  });

  it('returns nothing from an empty queue', () => {
    expect(takeBatch([], 10, 100)).toEqual([]);
  });
});

describe('batchByteLimit', () => {
  it('is 1 MiB unless the broker reads smaller frames', () => {
    expect(batchByteLimit(undefined)).toBe(MAX_BATCH_BYTES);
    expect(batchByteLimit(16 * 1024 * 1024)).toBe(MAX_BATCH_BYTES);
    expect(batchByteLimit(64 * 1024)).toBe(63 * 1024);
    expect(batchByteLimit(10)).toBe(1);
  });
});
