import { MESSAGE_ID_PATTERN } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { createMessageId } from './message-id.js';

describe('createMessageId', () => {
  it('is 32 lowercase hex digits that the protocol accepts', () => {
    const id = createMessageId();
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(id).toMatch(MESSAGE_ID_PATTERN);
  });

  it('starts with the 48-bit big-endian millisecond timestamp', () => {
    const nowMs = 0x0193_a1f4_c2d8;
    expect(createMessageId(nowMs).slice(0, 12)).toBe('0193a1f4c2d8');
    expect(createMessageId(2 ** 48 - 1).slice(0, 12)).toBe('ffffffffffff');
    expect(createMessageId(0).slice(0, 12)).toBe('000000000000');
  });

  it('sorts by creation time across milliseconds', () => {
    const ids = [1_763_750_000_000, 1_763_750_000_001, 1_763_750_000_256, 1_863_750_000_000].map((ms) =>
      createMessageId(ms),
    );
    expect([...ids].sort()).toEqual(ids);
  });

  it('differs within one millisecond (80 random bits)', () => {
    const ids = new Set(Array.from({ length: 1_000 }, () => createMessageId(1_763_750_000_000)));
    expect(ids.size).toBe(1_000);
  });
});

describe('createMessageId, random part', () => {
  it('hands out every random byte of the pool once, across refills', () => {
    const random = Array.from({ length: 2_000 }, () => createMessageId(0).slice(12));
    expect(new Set(random).size).toBe(random.length);
    for (const digits of random) expect(digits).toMatch(/^[0-9a-f]{20}$/);
  });
});
