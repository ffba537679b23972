import { describe, expect, it } from 'vitest';
import { matchesAnyNamePattern, matchesNamePattern, NAME_PATTERN_REGEX } from './name-pattern.js';

describe('name patterns', () => {
  it('matches an exact name only exactly', () => {
    expect(matchesNamePattern('orders', 'orders')).toBe(true);
    expect(matchesNamePattern('orders', 'orders-eu')).toBe(false);
    expect(matchesNamePattern('orders', 'order')).toBe(false);
  });

  it('matches a prefix ending in * and * alone matches everything', () => {
    expect(matchesNamePattern('payments-*', 'payments-eu')).toBe(true);
    expect(matchesNamePattern('payments-*', 'payments-')).toBe(true);
    expect(matchesNamePattern('payments-*', 'payments')).toBe(false);
    expect(matchesNamePattern('%DLQ%billing-*', '%DLQ%billing-eu')).toBe(true);
    expect(matchesNamePattern('%DLQ%billing-*', 'billing-eu')).toBe(false);
    expect(matchesNamePattern('*', 'anything')).toBe(true);
  });

  it('matches when any pattern of a list does, and never on an empty list', () => {
    expect(matchesAnyNamePattern(['a', 'b-*'], 'b-1')).toBe(true);
    expect(matchesAnyNamePattern(['a', 'b-*'], 'c')).toBe(false);
    expect(matchesAnyNamePattern([], 'a')).toBe(false);
  });

  it('accepts names and trailing-* prefixes, and refuses * elsewhere or other characters', () => {
    for (const good of ['orders', 'payments-*', '*', '%DLQ%billing-*', 'a.b_c-d'])
      expect(NAME_PATTERN_REGEX.test(good), good).toBe(true);
    for (const bad of ['', 'a*b', '*a', '**', 'a b', 'orders/*', 'x'.repeat(128)])
      expect(NAME_PATTERN_REGEX.test(bad), bad).toBe(false);
  });
});
