import { describe, expect, it } from 'vitest';
import { durationMs, formatDuration } from './duration.js';

describe('durationMs', () => {
  it.each([
    [0, 0],
    [1_500, 1_500],
    ['500ms', 500],
    ['10s', 10_000],
    ['1.5s', 1_500],
    ['1.1s', 1_100],
    ['0.3h', 1_080_000],
    ['1m', 60_000],
    ['1min', 60_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['1h30m', 5_400_000],
    ['1m 40s', 100_000],
    ['4h 45m 40s', 17_140_000],
    [' 10s ', 10_000],
  ])('%j is %d ms', (duration, ms) => {
    expect(durationMs(duration)).toBe(ms);
  });

  it.each([
    -1,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    0.5,
    '',
    'ten seconds',
    '10',
    '10x',
    '1s1m',
    '1m1m',
    '-5s',
    '0.0001s',
  ])('rejects %j', (duration) => {
    expect(() => durationMs(duration)).toThrow(RangeError);
  });
});

describe('formatDuration', () => {
  it.each([
    [0, '0s'],
    [10_000, '10s'],
    [100_000, '1m 40s'],
    [17_140_000, '4h 45m 40s'],
    [90_061_001, '1d 1h 1m 1s 1ms'],
    [-1_000, '-1s'],
  ])('%d ms is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
