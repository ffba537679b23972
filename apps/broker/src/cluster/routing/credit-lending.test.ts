import { describe, expect, it } from 'vitest';
import { CreditLending } from './credit-lending.js';

/** A client subscription over remote queues 1, 2 and 3, with `credits` of the client's credit. */
function lending(credits: number) {
  const loans: string[] = [];
  const account = new CreditLending({ credits }, (queue, loan) => loans.push(`${queue}:${loan}`));
  /** The client's credit the account can still answer for: never more than it granted. */
  const held = () => account.pool.credits + [1, 2, 3].reduce((sum, queue) => sum + account.lentTo(queue), 0);
  return { account, loans, held };
}

describe('CreditLending', () => {
  it('lends a queue what it has messages for, as far as the pool goes, and never more than the client granted', () => {
    const { account, loans, held } = lending(10);
    expect(account.openLoan(1, 4)).toBe(4);
    account.wanted(2, 5, false);
    account.wanted(3, 5, false);
    expect(loans).toEqual(['2:5', '3:1']);
    expect(account.pool.credits).toBe(0);
    expect(held()).toBe(10);
    // What a queue delivers leaves the account: the client holds it now.
    account.delivered(2, 5);
    expect(held()).toBe(5);
  });

  it('serves the queues that wait when credit comes back, late work first (P3)', () => {
    const { account, loans, held } = lending(2);
    account.wanted(1, 2, false);
    account.wanted(2, 3, false);
    account.wanted(3, 3, true);
    expect(loans).toEqual(['1:2']);
    // Queue 1 had less to deliver than it was lent.
    account.delivered(1, 1);
    account.returned(1, 1);
    expect(loans).toEqual(['1:2', '3:1']);
    account.pool.credits += 4;
    account.serveWaiting();
    // Queue 3 was served (its want is spent); queue 2 still waits and takes the rest.
    expect(loans).toEqual(['1:2', '3:1', '2:3']);
    expect(held()).toBe(account.pool.credits + 4);
  });

  it('lends only to late work while holding the pool for late work of its own, and serves the rest when it lets go', () => {
    const { account, loans } = lending(0);
    account.wanted(1, 2, false);
    account.pool.credits += 3;
    account.holding = true;
    account.wanted(2, 1, true);
    account.serveWaiting();
    // Queue 2's retry was lent credit at once; queue 1's first deliveries wait.
    expect(loans).toEqual(['2:1']);
    account.wanted(3, 1, false);
    expect(loans).toEqual(['2:1']);
    // What the late work here left is lent when the hold ends.
    account.pool.credits -= 1;
    account.holding = false;
    account.serveWaiting(true);
    expect(loans).toEqual(['2:1']);
    account.serveWaiting();
    expect(loans).toEqual(['2:1', '1:1']);
  });

  it('keeps 1 credit for each first loan still expected, so that none opens owing', () => {
    const { account } = lending(4);
    account.expectLoans(3);
    expect([account.openLoan(1, 4), account.openLoan(2, 4), account.openLoan(3, 4)]).toEqual([2, 1, 1]);
    expect(account.pool.credits).toBe(0);
  });

  it('owes the first loan of an empty pool, and pays it back from the next grant', () => {
    const { account, loans } = lending(0);
    expect(account.openLoan(1, 8)).toBe(1);
    expect(account.pool.credits).toBe(-1);
    account.wanted(2, 4, false);
    expect(loans).toEqual([]);
    account.pool.credits += 3;
    account.serveWaiting();
    expect(loans).toEqual(['2:2']);
  });

  it('takes back what a queue that is gone had not spent, and never more than it lent', () => {
    const { account, loans } = lending(6);
    account.openLoan(1, 6);
    account.delivered(1, 2);
    account.wanted(2, 3, false);
    account.forget(1);
    expect(account.pool.credits).toBe(1);
    expect(loans).toEqual(['2:3']);
    // A return larger than the loan (it raced a forget) adds nothing that was not lent.
    account.returned(2, 10);
    expect(account.pool.credits).toBe(4);
    expect(account.lentTo(2)).toBe(0);
  });
});
