import { describe, expect, it } from 'vitest';
import { matchesTagFilter, parseTagFilter } from './tag-filter.js';

describe('parseTagFilter', () => {
  it('parses * and tag lists with or without spaces', () => {
    expect(parseTagFilter('*')).toEqual({ ok: true, filter: { type: 'all' } });
    expect(parseTagFilter(' * ')).toEqual({ ok: true, filter: { type: 'all' } });
    expect(parseTagFilter('a||b')).toEqual({ ok: true, filter: { type: 'tags', tags: new Set(['a', 'b']) } });
    expect(parseTagFilter('created || paid')).toEqual({
      ok: true,
      filter: { type: 'tags', tags: new Set(['created', 'paid']) },
    });
  });

  it.each(['', 'a ||', '|| a', 'a | b', 'a || *', 'two words'])('rejects %j', (expression) => {
    const result = parseTagFilter(expression);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toContain('is not a tag expression');
  });
});

describe('matchesTagFilter', () => {
  it('passes every message through *, only listed tags otherwise', () => {
    const all = { type: 'all' } as const;
    const some = { type: 'tags', tags: new Set(['a', 'b']) } as const;
    expect(matchesTagFilter(all, undefined)).toBe(true);
    expect(matchesTagFilter(all, 'z')).toBe(true);
    expect(matchesTagFilter(some, 'a')).toBe(true);
    expect(matchesTagFilter(some, 'z')).toBe(false);
    expect(matchesTagFilter(some, undefined)).toBe(false);
  });
});
