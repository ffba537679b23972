import type { CreditPool } from '../../engine/index.js';

/** How a {@link CreditLending} lends a queue owned by another broker credit (`PeerConnection.credit`). */
export type LendCredit = (queue: number, credits: number) => void;

/** A remote queue's side of the loan: what it holds, and what it asked for and did not get yet. */
interface Borrower {
  lent: number;
  wanted: { readonly ready: number; readonly late: boolean } | undefined;
}

/**
 * The forwarding broker's account of one client subscription's credit over queues owned by other
 * brokers (the lending of `engine/dispatch/credit-pool.ts`'s `CreditLender`, seen from the lender). The
 * client's credit is one {@link CreditPool}: the queues this broker owns spend it directly; a
 * remote queue gets a loan when it says it has messages (`creditWanted`), as much as it has and the
 * pool allows, and gives back what it cannot spend (`creditReturned`). A loan leaves the pool when
 * it is lent, so the client never holds more than its credit in all; a queue that wanted credit
 * while the pool was empty is served when credit comes back, late work (P3) first.
 */
export class CreditLending {
  readonly pool: CreditPool;
  readonly #lend: LendCredit;
  readonly #onRefilled: () => void;
  readonly #borrowers = new Map<number, Borrower>();
  /** First loans still to be opened ({@link expectLoans}). */
  #expectedLoans = 0;

  /**
   * While set, a queue that wants credit for first deliveries only is not lent any yet: late work
   * in a queue this broker owns is about to spend the pool (`QueueSubscriptions`), and P3 puts it
   * first. Whoever sets it serves the waiting queues when it clears it.
   */
  holding = false;

  /**
   * `onRefilled`: credit came back to the pool (a queue returned it, or is gone); it spends it,
   * across the queues this broker owns and those it lends to. By default, it is lent to the queues
   * that wait.
   */
  constructor(pool: CreditPool, lend: LendCredit, onRefilled?: () => void) {
    this.pool = pool;
    this.#lend = lend;
    this.#onRefilled = onRefilled ?? (() => this.serveWaiting());
  }

  /** What `queue` holds on loan now. */
  lentTo(queue: number): number {
    return this.#borrowers.get(queue)?.lent ?? 0;
  }

  /**
   * `count` remote queues are about to open their first loans ({@link openLoan}): each leaves 1
   * credit in the pool for each one still to come, as far as the pool goes, so that none opens
   * owing while an earlier one took it all.
   */
  expectLoans(count: number): void {
    this.#expectedLoans = count;
  }

  /**
   * The first loan, made with the subscription itself (`subscribe`'s `maxCachedMessages`): up to
   * `credits`, less what is kept for the loans still expected, and at least 1, which a peer older
   * than credit lending requires of `subscribe` (a client's own loans may open at 0). With an empty pool that 1 is owed: the pool goes below zero, nobody spends it, and
   * the client's next grant pays it back first. So a client may be handed, at first, up to one
   * delivery per remote queue beyond its credit, only when its credit is smaller than the number
   * of queues other brokers own.
   */
  openLoan(queue: number, credits: number): number {
    this.#expectedLoans = Math.max(0, this.#expectedLoans - 1);
    const loan = Math.max(1, Math.min(credits, this.pool.credits - this.#expectedLoans));
    this.pool.credits -= loan;
    this.#borrower(queue).lent += loan;
    return loan;
  }

  /** `creditWanted` from `queue`: lend it what it has messages for, or queue it until credit comes back. */
  wanted(queue: number, ready: number, late: boolean): void {
    const borrower = this.#borrower(queue);
    borrower.wanted = { ready, late };
    if (late || !this.holding) this.#serve([queue]);
  }

  /** `deliver` from `queue`: what it spent of its loan. */
  delivered(queue: number, count: number): void {
    const borrower = this.#borrower(queue);
    borrower.lent = Math.max(0, borrower.lent - count);
  }

  /** `creditReturned` from `queue`: back in the pool, and spent again (`onRefilled`). */
  returned(queue: number, credits: number): void {
    const borrower = this.#borrower(queue);
    const back = Math.min(credits, borrower.lent);
    borrower.lent -= back;
    this.pool.credits += back;
    if (this.pool.credits > 0) this.#onRefilled();
  }

  /**
   * The pool grew (the client granted credit, or credit came back): lend to the queues that wait,
   * late ones first; with `lateOnly` (or while {@link holding}), to those with late work (P3) only.
   */
  serveWaiting(lateOnly = false): void {
    const waiting = [...this.#borrowers.entries()]
      .filter(([, { wanted }]) => wanted !== undefined && (wanted.late || !(lateOnly || this.holding)))
      .sort(([, a], [, b]) => Number(b.wanted?.late) - Number(a.wanted?.late))
      .map(([queue]) => queue);
    this.#serve(waiting);
  }

  /**
   * `queue`'s subscription is gone (its connection closed, or its owner changed): what it had not
   * spent comes back, and is spent again (`onRefilled`).
   */
  forget(queue: number): void {
    const borrower = this.#borrowers.get(queue);
    if (!borrower) return;
    this.#borrowers.delete(queue);
    this.pool.credits += borrower.lent;
    if (this.pool.credits > 0) this.#onRefilled();
  }

  #serve(queues: readonly number[]): void {
    for (const queue of queues) {
      if (this.pool.credits <= 0) return;
      const borrower = this.#borrowers.get(queue);
      if (borrower?.wanted === undefined) continue;
      const loan = Math.min(this.pool.credits, borrower.wanted.ready);
      borrower.wanted = undefined;
      this.pool.credits -= loan;
      borrower.lent += loan;
      this.#lend(queue, loan);
    }
  }

  #borrower(queue: number): Borrower {
    let borrower = this.#borrowers.get(queue);
    if (!borrower) {
      borrower = { lent: 0, wanted: undefined };
      this.#borrowers.set(queue, borrower);
    }
    return borrower;
  }
}
