import { describe, expect, it } from 'vitest';
import { queueOfMessage } from './queue-placement.js';

describe('queueOfMessage', () => {
  it('is 32-bit FNV-1a of the id modulo the queue count (the stored layout: these values never change)', () => {
    // FNV-1a("a") = 0xe40c292c, FNV-1a("foobar") = 0xbf9cf968: the published test vectors.
    expect(queueOfMessage({ messageId: 'a' }, 7)).toBe(0xe40c292c % 7);
    expect(queueOfMessage({ messageId: 'foobar' }, 13)).toBe(0xbf9cf968 % 13);
  });

  it('places by the message group when there is one, whatever the id', () => {
    const inGroup = ['m1', 'm2', 'm3', 'm4'].map((messageId) =>
      queueOfMessage({ messageId, messageGroup: 'customer-7' }, 8),
    );
    expect(new Set(inGroup)).toEqual(new Set([queueOfMessage({ messageId: 'customer-7' }, 8)]));
  });

  it('puts everything in queue 0 of a store of one queue', () => {
    expect(queueOfMessage({ messageId: 'foobar' }, 1)).toBe(0);
  });
});
