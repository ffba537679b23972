import { describe, expect, it } from 'vitest';
import { creditPoolOf } from '../../engine/dispatch/credit-pool.js';
import { OwnedCreditLoan } from './owned-credit-loan.js';

function loanOf(credits: number) {
  const pool = creditPoolOf(credits, undefined);
  const sent: string[] = [];
  const looked: number[][] = [];
  const loan = new OwnedCreditLoan(
    7,
    pool,
    {
      wanted: (id, ready, late) => sent.push(`wanted ${id} ${ready} ${late}`),
      returned: (id, returned) => sent.push(`returned ${id} ${returned}`),
    },
    (queues) => looked.push([...queues]),
  );
  return { pool, sent, looked, loan };
}

describe('OwnedCreditLoan', () => {
  it('gives a loan back at once with no queue to spend it, and when its last queue moves away', () => {
    const empty = loanOf(3);
    empty.loan.settleEmpty();
    expect(empty.sent).toEqual(['returned 7 3']);
    expect(empty.pool.credits).toBe(0);

    const { pool, sent, loan } = loanOf(2);
    loan.lenderFor(0);
    loan.settleEmpty();
    expect(sent).toEqual([]);
    loan.leave(0);
    expect(sent).toEqual(['returned 7 2']);
    expect(pool.credits).toBe(0);
  });

  it('keeps credit one queue gives back for the queues that may spend it, and gives it back when each has', () => {
    const { pool, sent, looked, loan } = loanOf(0);
    const q0 = loan.lenderFor(0);
    const q1 = loan.lenderFor(1);
    pool.credits = 0;
    q0.returned(100, 4);
    expect(pool.credits).toBe(4);
    expect(looked).toEqual([[1]]);
    expect(sent).toEqual([]);
    pool.credits = 0;
    q1.returned(101, 4);
    expect(sent).toEqual(['returned 7 4']);
    // Work wakes queue 1 again: it delivers, and a later give-back waits for it.
    loan.delivered(1);
    pool.credits = 0;
    q0.returned(100, 2);
    expect(sent).toEqual(['returned 7 4']);
    expect(pool.credits).toBe(2);
  });

  it('sends one want until the client lends, and another before that only to say a retry waits (P3)', () => {
    const { sent, loan } = loanOf(0);
    const q0 = loan.lenderFor(0);
    const q1 = loan.lenderFor(1);
    q0.wanted(100, 5, false);
    q1.wanted(101, 3, false);
    expect(sent).toEqual(['wanted 7 5 false']);
    q1.wanted(101, 1, true);
    q0.wanted(100, 5, true);
    expect(sent).toEqual(['wanted 7 5 false', 'wanted 7 1 true']);
    loan.lent();
    q0.wanted(100, 2, false);
    expect(sent).toEqual(['wanted 7 5 false', 'wanted 7 1 true', 'wanted 7 2 false']);
  });
});
