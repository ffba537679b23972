import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CreditLoans } from './credit-loans.js';

/**
 * Loans of a pool of `capacity` (floor `floor`) over owners named by strings, with the consumer's
 * side kept here: `deliver` takes credit an owner held into the cache, `settle` sends results.
 */
function loansOf(capacity: number, options: { floor?: number; lendable?: (owner: string) => boolean } = {}) {
  const lent: [string, number][] = [];
  let out = 0;
  const loans = new CreditLoans<string>({
    capacity: () => capacity,
    floor: options.floor ?? capacity,
    outstanding: () => out,
    lend: (owner, credits) => {
      if (options.lendable?.(owner) === false) return false;
      lent.push([owner, credits]);
      return true;
    },
  });
  const deliver = (owner: string, count: number) => {
    out += count;
    loans.delivered(owner, count);
  };
  const settle = (count: number, waiting?: number) => {
    out -= count;
    loans.settled(count, waiting);
  };
  return { loans, lent, deliver, settle };
}

describe('CreditLoans', () => {
  it('opens first loans out of what the pool has left, 0 once it is spent, and lends to a want only what the pool has', () => {
    const { loans, lent } = loansOf(8);
    expect(loans.open('a', 4)).toBe(4);
    expect(loans.open('b', 3)).toBe(3);
    expect(loans.open('c', 4)).toBe(1);
    // The pool is spent: a fourth owner opens with nothing, and asks when it has messages.
    expect(loans.open('d', 4)).toBe(0);
    expect(loans.available).toBe(0);
    loans.wanted('d', 10, false);
    expect(lent).toEqual([]);
    loans.returned('a', 3);
    expect(lent).toEqual([['d', 3]]);
    expect(loans.available).toBe(0);
  });

  it('keeps a delivery against the pool until its result is sent, and lends it again then', () => {
    const { loans, lent, deliver, settle } = loansOf(4);
    loans.open('a', 2);
    loans.open('b', 2);
    deliver('a', 2);
    loans.wanted('a', 5, false);
    expect(lent).toEqual([]);
    settle(1);
    expect(lent).toEqual([['a', 1]]);
  });

  it('serves a retry first: credit that comes back goes to the owner that said late, not to the one that asked first (P3)', () => {
    const { loans, lent, deliver, settle } = loansOf(4);
    loans.open('a', 2);
    loans.open('b', 2);
    deliver('a', 2);
    deliver('b', 2);
    loans.wanted('a', 50, false);
    loans.wanted('b', 1, true);
    settle(2);
    expect(lent).toEqual([
      ['b', 1],
      ['a', 1],
    ]);
  });

  it('remembers that a retry waits when a later want of the same owner does not say so', () => {
    const { loans, lent, deliver, settle } = loansOf(2);
    loans.open('a', 1);
    loans.open('b', 1);
    deliver('a', 1);
    deliver('b', 1);
    loans.wanted('a', 3, false);
    loans.wanted('b', 1, true);
    loans.wanted('b', 2, false);
    settle(1);
    expect(lent).toEqual([['b', 1]]);
  });

  it('lends nothing unasked: credit given back stays in the pool until a want (no ping-pong)', () => {
    const { loans, lent } = loansOf(6);
    loans.open('a', 3);
    loans.open('b', 3);
    loans.returned('a', 3);
    loans.returned('b', 3);
    expect(lent).toEqual([]);
    expect(loans.available).toBe(6);
  });

  it('keeps a want for later when the owner cannot be lent to now, and forgets an owner whose subscription is gone', () => {
    let reachable = false;
    const { loans, lent, deliver, settle } = loansOf(4, { lendable: (owner) => owner !== 'a' || reachable });
    loans.open('a', 2);
    loans.open('b', 2);
    deliver('b', 2);
    loans.wanted('a', 2, true);
    loans.returned('a', 2);
    expect(lent).toEqual([]);
    reachable = true;
    loans.serve();
    expect(lent).toEqual([['a', 2]]);
    settle(2);
    loans.forget('b');
    expect(loans.has('b')).toBe(false);
    expect(loans.available).toBe(2);
  });

  it('starts at its floor, doubles when the listeners starve while an owner waits, and shrinks when the cache holds more than they need', () => {
    const { loans, lent, deliver, settle } = loansOf(100, { floor: 4 });
    expect(loans.size).toBe(4);
    loans.open('a', 4);
    deliver('a', 4);
    // Starved with nobody waiting: an idle consumer keeps its pool.
    settle(4, 0);
    loans.starved();
    expect(loans.size).toBe(4);
    loans.wanted('a', 50, false);
    expect(lent).toEqual([['a', 4]]);
    deliver('a', 4);
    loans.wanted('a', 50, false);
    loans.starved();
    expect(loans.size).toBe(8);
    expect(lent.at(-1)).toEqual(['a', 4]);
    deliver('a', 4);
    settle(4, 6);
    settle(4, 6);
    // The epoch in which the listeners starved does not shrink the pool.
    expect(loans.size).toBe(8);
    // A pool's worth of results with 6 startable messages cached each time: 3 of them were not needed.
    deliver('a', 8);
    settle(4, 6);
    settle(4, 6);
    expect(loans.size).toBe(5);
  });

  it('lends a waiting retry the credit a result frees even while the pool is over-committed (P3)', () => {
    const { loans, lent, deliver, settle } = loansOf(100, { floor: 2 });
    loans.open('a', 2);
    loans.open('b', 2);
    // b opened owing 1: the pool of 2 has 3 out.
    deliver('a', 2);
    deliver('b', 1);
    loans.wanted('a', 10, false);
    loans.wanted('b', 1, true);
    settle(1);
    expect(lent).toEqual([['b', 1]]);
    expect(loans.size).toBe(3);
    // A first delivery does not grow it: it waits for credit the pool has.
    deliver('b', 1);
    settle(0);
    expect(lent).toEqual([['b', 1]]);
    expect(loans.size).toBe(3);
  });

  it('never has more out than the pool, whatever the brokers ask and give back', () => {
    const owners = ['a', 'b', 'c'];
    const ownerOf = fc.constantFrom(...owners);
    const count = fc.integer({ min: 1, max: 20 });
    const event = fc.oneof(
      fc.record({ type: fc.constant('wanted' as const), owner: ownerOf, ready: count, late: fc.boolean() }),
      fc.record({ type: fc.constant('deliver' as const), owner: ownerOf, count }),
      fc.record({ type: fc.constant('settle' as const), owner: ownerOf, count, waiting: fc.nat(20) }),
      fc.record({ type: fc.constant('return' as const), owner: ownerOf }),
      fc.record({ type: fc.constant('starve' as const), owner: ownerOf }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 30 }), fc.array(event, { maxLength: 60 }), (capacity, events) => {
        // The brokers' side: what each holds, as the loans were made; and the consumer's cache.
        const held = new Map<string, number>();
        const out = new Map<string, number>();
        const total = (map: Map<string, number>) => [...map.values()].reduce((sum, n) => sum + n, 0);
        const loans = new CreditLoans<string>({
          capacity: () => capacity,
          floor: 2,
          outstanding: () => total(out),
          lend: (owner, credits) => {
            held.set(owner, (held.get(owner) ?? 0) + credits);
            return true;
          },
        });
        for (const owner of owners) held.set(owner, loans.open(owner, 1));
        for (const step of events) {
          const owner = step.owner;
          switch (step.type) {
            case 'wanted':
              if ((held.get(owner) ?? 0) === 0) loans.wanted(owner, step.ready, step.late);
              break;
            case 'deliver': {
              const delivered = Math.min(step.count, held.get(owner) ?? 0);
              if (delivered === 0) break;
              held.set(owner, (held.get(owner) ?? 0) - delivered);
              out.set(owner, (out.get(owner) ?? 0) + delivered);
              loans.delivered(owner, delivered);
              break;
            }
            case 'settle': {
              const settled = Math.min(step.count, out.get(owner) ?? 0);
              if (settled === 0) break;
              out.set(owner, (out.get(owner) ?? 0) - settled);
              loans.settled(settled, step.waiting);
              break;
            }
            case 'return': {
              const credits = held.get(owner) ?? 0;
              if (credits === 0) break;
              held.set(owner, 0);
              loans.returned(owner, credits);
              break;
            }
            case 'starve':
              loans.starved();
              break;
          }
          // First loans included: never above the pool.
          expect(total(held) + total(out)).toBeLessThanOrEqual(loans.size);
          expect(loans.size).toBeLessThanOrEqual(capacity);
        }
      }),
    );
  });
});
