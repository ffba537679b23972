import { describe, expect, it } from 'vitest';
import { fromHex, toHex } from './hex.js';

describe('hex', () => {
  it('round-trips and ignores white space', () => {
    expect(toHex(new Uint8Array([0, 15, 255]))).toBe('000fff');
    expect(fromHex('00 0f\nff')).toEqual(new Uint8Array([0, 15, 255]));
  });

  it('rejects odd lengths and non-hex characters', () => {
    expect(() => fromHex('abc')).toThrow(RangeError);
    expect(() => fromHex('zz')).toThrow(RangeError);
  });
});
