import { describe, expect, it } from 'vitest';
import { propertiesByteLength, utf8ByteLength } from './limits.js';

describe('utf8ByteLength', () => {
  it.each([
    ['', 0],
    ['abc', 3],
    ['é', 2],
    ['€', 3],
    ['😀', 4],
    ['\ud800', 3],
    ['a\ud800b', 5],
  ])('%j is %i bytes', (text, bytes) => {
    expect(utf8ByteLength(text)).toBe(bytes);
  });
});

describe('propertiesByteLength', () => {
  it('counts keys and values', () => {
    expect(propertiesByteLength({ ab: 'cd', é: '€' })).toBe(4 + 5);
  });
});
