import { describe, expect, it } from 'vitest';
import { decodeReceiptHandle, encodeReceiptHandle } from './receipt-handle.js';

describe('receipt handles', () => {
  it('round-trip, DLQ topics included', () => {
    for (const handle of [
      { group: 'billing', topic: 'orders.v2', offset: 0, lease: 1 },
      { group: 'ops', topic: '%DLQ%billing', offset: 123_456_789, lease: 42 },
    ]) {
      expect(decodeReceiptHandle(encodeReceiptHandle(handle))).toEqual(handle);
    }
  });

  it.each([
    '',
    'x',
    '1~g~t~0',
    '2~g~t~0~1',
    '1~g~t~-1~1',
    '1~g~t~0~0',
    '1~g~t~01~1',
    '1~g h~t~0~1',
    '1~g~%X%t~0~1',
    '1~g~t~0~1.5',
  ])('rejects %j', (text) => {
    expect(decodeReceiptHandle(text)).toBeUndefined();
  });
});
