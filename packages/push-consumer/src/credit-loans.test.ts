import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CreditLoans } from './credit-loans.js';

/** Loans of a pool of `capacity` over owners named by strings; what was lent, in order. */
function loansOf(capacity: number, lendable: (owner: string) => boolean = () => true) {
  const lent: [string, number][] = [];
  const loans = new CreditLoans<string>(
    () => capacity,
    (owner, credits) => {
      if (!lendable(owner)) return false;
      lent.push([owner, credits]);
      return true;
    },
  );
  return { loans, lent };
}

describe('CreditLoans', () => {
  it('opens first loans out of the pool, at least 1 each, and lends to a want only what the pool has', () => {
    const { loans, lent } = loansOf(8);
    expect(loans.open('a', 4)).toBe(4);
    expect(loans.open('b', 4)).toBe(4);
    // The pool is spent: a third owner opens owing its 1.
    expect(loans.open('c', 4)).toBe(1);
    expect(loans.available).toBe(-1);
    loans.wanted('c', 10, false);
    expect(lent).toEqual([]);
    // a gives back 3: 1 pays what c owed, 2 are lent to c.
    loans.returned('a', 3);
    expect(lent).toEqual([['c', 2]]);
    expect(loans.available).toBe(0);
  });

  it('keeps a delivery against the pool until its result is sent, and lends it again then', () => {
    const { loans, lent } = loansOf(4);
    loans.open('a', 2);
    loans.open('b', 2);
    loans.delivered('a', 2);
    loans.wanted('a', 5, false);
    expect(lent).toEqual([]);
    loans.settled('a', 1);
    expect(lent).toEqual([['a', 1]]);
  });

  it('serves a retry first: credit that comes back goes to the owner that said late, not to the one that asked first (P3)', () => {
    const { loans, lent } = loansOf(4);
    loans.open('a', 2);
    loans.open('b', 2);
    loans.delivered('a', 2);
    loans.delivered('b', 2);
    loans.wanted('a', 50, false);
    loans.wanted('b', 1, true);
    loans.settled('a', 2);
    expect(lent).toEqual([
      ['b', 1],
      ['a', 1],
    ]);
  });

  it('remembers that a retry waits when a later want of the same owner does not say so', () => {
    const { loans, lent } = loansOf(2);
    loans.open('a', 1);
    loans.open('b', 1);
    loans.delivered('a', 1);
    loans.delivered('b', 1);
    loans.wanted('a', 3, false);
    loans.wanted('b', 1, true);
    loans.wanted('b', 2, false);
    loans.settled('a', 1);
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
    const { loans, lent } = loansOf(4, (owner) => owner !== 'a' || reachable);
    loans.open('a', 2);
    loans.open('b', 2);
    loans.delivered('b', 2);
    loans.wanted('a', 2, true);
    loans.returned('a', 2);
    expect(lent).toEqual([]);
    reachable = true;
    loans.settled('b', 1);
    expect(lent).toEqual([['a', 2]]);
    loans.forget('b');
    expect(loans.has('b')).toBe(false);
    expect(loans.available).toBe(2);
  });

  it('never has more out than the pool, whatever the brokers ask and give back', () => {
    const owners = ['a', 'b', 'c'];
    const event = fc.oneof(
      fc.record({
        type: fc.constant('wanted' as const),
        owner: fc.constantFrom(...owners),
        ready: fc.integer({ min: 1, max: 20 }),
        late: fc.boolean(),
      }),
      fc.record({
        type: fc.constant('deliver' as const),
        owner: fc.constantFrom(...owners),
        count: fc.integer({ min: 1, max: 20 }),
      }),
      fc.record({
        type: fc.constant('settle' as const),
        owner: fc.constantFrom(...owners),
        count: fc.integer({ min: 1, max: 20 }),
      }),
      fc.record({ type: fc.constant('return' as const), owner: fc.constantFrom(...owners) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 3, max: 30 }), fc.array(event, { maxLength: 60 }), (capacity, events) => {
        // The brokers' side: what each holds and has delivered unsettled, as the loans were made.
        const held = new Map<string, number>();
        const out = new Map<string, number>();
        const loans = new CreditLoans<string>(
          () => capacity,
          (owner, credits) => {
            held.set(owner, (held.get(owner) ?? 0) + credits);
            return true;
          },
        );
        for (const owner of owners) held.set(owner, loans.open(owner, Math.floor(capacity / 3)));
        for (const step of events) {
          const owner = step.owner;
          switch (step.type) {
            case 'wanted':
              if ((held.get(owner) ?? 0) === 0) loans.wanted(owner, step.ready, step.late);
              break;
            case 'deliver': {
              const count = Math.min(step.count, held.get(owner) ?? 0);
              if (count === 0) break;
              held.set(owner, (held.get(owner) ?? 0) - count);
              out.set(owner, (out.get(owner) ?? 0) + count);
              loans.delivered(owner, count);
              break;
            }
            case 'settle': {
              const count = Math.min(step.count, out.get(owner) ?? 0);
              if (count === 0) break;
              out.set(owner, (out.get(owner) ?? 0) - count);
              loans.settled(owner, count);
              break;
            }
            case 'return': {
              const credits = held.get(owner) ?? 0;
              if (credits === 0) break;
              held.set(owner, 0);
              loans.returned(owner, credits);
              break;
            }
          }
          let total = 0;
          for (const owner of owners) total += (held.get(owner) ?? 0) + (out.get(owner) ?? 0);
          expect(total).toBeLessThanOrEqual(capacity);
        }
      }),
    );
  });
});
