import { describe, expect, it } from 'vitest';
import { pageByName } from './name-page.js';

const named = (...names: string[]) => names.map((name) => ({ name }));
const names = (page: { items: readonly { name: string }[] }) => page.items.map((item) => item.name);

describe('pageByName', () => {
  it('orders by code unit, not locale, so `%DLQ%` and upper case come first', () => {
    const page = pageByName(named('b', '%DLQ%b', 'a', 'B'), undefined, 10);
    expect(names(page)).toEqual(['%DLQ%b', 'B', 'a', 'b']);
    expect(page.lastName).toBeNull();
  });

  it('continues strictly after a name, whether or not it is still there', () => {
    const items = named('a', 'b', 'c', 'd');
    expect(pageByName(items, 'b', 2)).toEqual({ items: named('c', 'd'), lastName: null });
    expect(pageByName(items, 'bb', 1)).toEqual({ items: named('c'), lastName: 'c' });
    expect(pageByName(items, 'd', 5)).toEqual({ items: [], lastName: null });
  });

  it('names a last page only when more items follow it', () => {
    const items = named('a', 'b', 'c');
    expect(pageByName(items, undefined, 2).lastName).toBe('b');
    expect(pageByName(items, undefined, 3).lastName).toBeNull();
  });
});
