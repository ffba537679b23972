import { describe, expect, it } from 'vitest';
import { creditPoolOf, type LentCredit, settleLoan } from './credit-pool.js';

function lentMember(credits: number) {
  const sent: string[] = [];
  const member: LentCredit = {
    id: 3,
    pool: creditPoolOf(credits, undefined),
    lender: {
      wanted: (id, ready, late) => sent.push(`wanted ${id} ${ready} ${late}`),
      returned: (id, returned) => sent.push(`returned ${id} ${returned}`),
    },
    wantSent: false,
    quiet: false,
  };
  return { member, sent };
}

describe('settleLoan', () => {
  it('asks once while it waits, and once more when a retry falls due meanwhile (P3)', () => {
    const { member, sent } = lentMember(0);
    settleLoan(member, false, () => ({ ready: 5, late: false }));
    settleLoan(member, false, () => ({ ready: 6, late: false }));
    expect(sent).toEqual(['wanted 3 5 false']);
    settleLoan(member, false, () => ({ ready: 7, late: true }));
    settleLoan(member, false, () => ({ ready: 7, late: true }));
    expect(sent).toEqual(['wanted 3 5 false', 'wanted 3 7 true']);
  });

  it('gives back what a pass could not spend, and stays quiet until new work', () => {
    const { member, sent } = lentMember(4);
    settleLoan(member, false, () => undefined);
    expect(sent).toEqual([]);
    settleLoan(member, true, () => undefined);
    expect(sent).toEqual(['returned 3 4']);
    settleLoan(member, false, () => ({ ready: 1, late: true }));
    expect(sent).toEqual(['returned 3 4']);
  });
});
