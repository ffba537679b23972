import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NameOrder } from './name-order.js';

const named = (...names: string[]) => names.map((name) => ({ name }));
const names = (page: { items: readonly { name: string }[] }) => page.items.map((item) => item.name);
const orderOf = (...entries: string[]) => {
  const order = new NameOrder<{ name: string }>();
  for (const entry of named(...entries)) order.add(entry);
  return order;
};

/** Every page from the first on, `limit` at a time, as a client pages with the cursor. */
function pageThrough(order: NameOrder<{ name: string }>, limit: number): string[] {
  const seen: string[] = [];
  let after: string | undefined;
  for (let guard = 0; guard < 10_000; guard++) {
    const page = order.page(after, limit);
    seen.push(...names(page));
    if (page.lastName === null) return seen;
    after = page.lastName;
  }
  throw new Error('paging did not end');
}

describe('NameOrder', () => {
  it('orders by code unit, not locale, so `%DLQ%` and upper case come first', () => {
    const page = orderOf('b', '%DLQ%b', 'a', 'B').page(undefined, 10);
    expect(names(page)).toEqual(['%DLQ%b', 'B', 'a', 'b']);
    expect(page.lastName).toBeNull();
  });

  it('continues strictly after a name, whether or not it is there', () => {
    const order = orderOf('a', 'b', 'c', 'd');
    expect(order.page('b', 2)).toEqual({ items: named('c', 'd'), lastName: null });
    expect(order.page('bb', 1)).toEqual({ items: named('c'), lastName: 'c' });
    expect(order.page('d', 5)).toEqual({ items: [], lastName: null });
    expect(order.page('0', 1)).toEqual({ items: named('a'), lastName: 'a' });
  });

  it('names a last page only when more entries follow it', () => {
    const order = orderOf('a', 'b', 'c');
    expect(order.page(undefined, 2).lastName).toBe('b');
    expect(order.page(undefined, 3).lastName).toBeNull();
    expect(new NameOrder().page(undefined, 3)).toEqual({ items: [], lastName: null });
  });

  it('takes in entries added between pages, before and after the cursor', () => {
    const order = orderOf('b', 'd');
    expect(names(order.page(undefined, 1))).toEqual(['b']);
    order.add({ name: 'a' });
    order.add({ name: 'c' });
    order.add({ name: 'e' });
    expect(order.page('b', 2)).toEqual({ items: named('c', 'd'), lastName: 'd' });
    expect(names(order.page(undefined, 10))).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('pages through exactly the sorted names, whatever the order of adds and reads', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ maxLength: 6 }), { maxLength: 60 }),
        fc.array(fc.nat(60), { maxLength: 5 }),
        fc.integer({ min: 1, max: 7 }),
        (entries, readsAt, limit) => {
          const order = new NameOrder<{ name: string }>();
          for (const [index, name] of entries.entries()) {
            // Pages read while entries are still being added merge what came so far.
            if (readsAt.includes(index)) order.page(undefined, limit);
            order.add({ name });
          }
          const sorted = [...entries].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
          expect(pageThrough(order, limit)).toEqual(sorted);
        },
      ),
    );
  });
});
