import { initialPushState } from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import type { DeliveryRecord } from '../../store/records.js';
import { DurableRecordCache } from './durable-record-cache.js';

const at = (offset: number) => ({ group: 'g', topic: 't', offset });
const record = (messageId: string): DeliveryRecord => ({
  consumer: 'push',
  state: initialPushState(),
  messageId,
});

describe('DurableRecordCache', () => {
  it('holds at most its capacity, forgetting the oldest write first', () => {
    const cache = new DurableRecordCache(3);
    for (let offset = 0; offset < 5; offset++) cache.set(at(offset), record(`m${offset}`));
    expect(cache.size).toBe(3);
    expect(cache.get(at(0))).toBeUndefined();
    expect(cache.get(at(1))).toBeUndefined();
    expect(cache.get(at(4))?.messageId).toBe('m4');
  });

  it('keeps a record written again past the eviction of its older write', () => {
    const cache = new DurableRecordCache(2);
    cache.set(at(0), record('first'));
    cache.set(at(1), record('other'));
    cache.set(at(0), record('second'));
    // The slot of the first write of offset 0 is reused: the second write of it stays.
    cache.set(at(2), record('third'));
    expect(cache.get(at(0))?.messageId).toBe('second');
    expect(cache.has(at(1))).toBe(false);
    expect(cache.size).toBe(2);
  });

  it('forgets a failed write only while it is still the newest', () => {
    const cache = new DurableRecordCache();
    const failed = record('failed');
    cache.set(at(0), failed);
    const newer = record('newer');
    cache.set(at(0), newer);
    cache.forget(at(0), failed);
    expect(cache.get(at(0))).toBe(newer);
    cache.forget(at(0), newer);
    expect(cache.has(at(0))).toBe(false);
    cache.set(at(1), record('gone'));
    cache.delete(at(1));
    expect(cache.size).toBe(0);
  });

  it('refuses a capacity that holds nothing', () => {
    expect(() => new DurableRecordCache(0)).toThrow(RangeError);
  });
});
