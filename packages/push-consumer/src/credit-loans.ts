/** How {@link CreditLoans} lends a borrower credit (a `credit` frame); `false` when it cannot now (its session is gone). */
export type LendCredit<B> = (borrower: B, credits: number) => boolean;

/** A borrower's account: what its broker holds on loan, what it delivered and is not settled, and what it asked for. */
interface Account {
  held: number;
  out: number;
  wanted: { readonly ready: number; readonly late: boolean } | undefined;
}

/**
 * A push consumer's credit as one pool lent to its owned-scope subscriptions, one per queue owner
 * (docs/protocol/README.md#credit-lending): the client's side of what a forwarding broker does
 * with a client's credit over other brokers' queues. Each subscription (a borrower) opens with a
 * first loan, asks for more when its broker has messages Ready and it has none (`creditWanted`,
 * {@link wanted}), and gives back what its broker cannot spend (`creditReturned`, {@link returned}).
 *
 * - **Never more than the pool in all**: a borrower's credit counts against the pool from the
 *   loan until the result of the delivery that spent it is sent (or the credit comes back), so
 *   the credit held by all the brokers and the deliveries not yet settled together never exceed
 *   {@link capacity} (but for the 1 each first loan needs when the pool is smaller than the
 *   number of owners).
 * - **Retries first (P3)**: credit that comes back goes to the borrowers that said a retry waits
 *   (`late`) before the others, so a retry at one owner is delivered before later first
 *   deliveries at another, whose broker holds no credit it was not lent.
 * - **No ping-pong**: credit is lent only to a borrower that asked, never pushed; a broker that
 *   gave its credit back asks again only once new work reaches it.
 */
export class CreditLoans<B> {
  readonly #capacity: () => number;
  readonly #lend: LendCredit<B>;
  readonly #accounts = new Map<B, Account>();

  /** `capacity`: the pool, the consumer's `maxCachedMessages` less what subscriptions that do not borrow may hold. */
  constructor(capacity: () => number, lend: LendCredit<B>) {
    this.#capacity = capacity;
    this.#lend = lend;
  }

  /** What the pool has left to lend now (below 0 while first loans are owed). */
  get available(): number {
    let taken = 0;
    for (const account of this.#accounts.values()) taken += account.held + account.out;
    return this.#capacity() - taken;
  }

  /** Whether `borrower` has an account (it subscribed, and was not forgotten since). */
  has(borrower: B): boolean {
    return this.#accounts.has(borrower);
  }

  /**
   * `borrower` subscribes (again): whatever it had is forgotten (its last session's deliveries
   * were released, C2), and its first loan, `subscribe.maxCachedMessages`, is up to `credits`
   * of what is left, and at least 1, which `subscribe` needs.
   */
  open(borrower: B, credits: number): number {
    this.#accounts.delete(borrower);
    const loan = Math.max(1, Math.min(credits, this.available));
    this.#accounts.set(borrower, { held: loan, out: 0, wanted: undefined });
    return loan;
  }

  /** `deliver` from `borrower`: `count` credits it held are deliveries out now. */
  delivered(borrower: B, count: number): void {
    const account = this.#accounts.get(borrower);
    if (account === undefined) return;
    account.held = Math.max(0, account.held - count);
    account.out += count;
  }

  /** The results of `count` of `borrower`'s deliveries were sent: their credit is the pool's again. */
  settled(borrower: B, count: number): void {
    const account = this.#accounts.get(borrower);
    if (account === undefined) return;
    account.out = Math.max(0, account.out - count);
    this.#serve();
  }

  /** `creditWanted` from `borrower`: lend it what it has messages for, or wait until credit comes back. */
  wanted(borrower: B, ready: number, late: boolean): void {
    const account = this.#accounts.get(borrower);
    if (account === undefined) return;
    // A later want that says a retry waits keeps that, however many the broker counts now.
    account.wanted = { ready: Math.max(1, ready), late: late || account.wanted?.late === true };
    this.#serve();
  }

  /** `creditReturned` from `borrower`: back in the pool, and lent to those that wait. */
  returned(borrower: B, credits: number): void {
    const account = this.#accounts.get(borrower);
    if (account === undefined) return;
    account.held = Math.max(0, account.held - credits);
    this.#serve();
  }

  /** `borrower`'s subscription is gone (its session ended, or it was retired): what it held and had out comes back. */
  forget(borrower: B): void {
    if (this.#accounts.delete(borrower)) this.#serve();
  }

  /** Lend what the pool has to the borrowers that wait (one that could not be lent to may be now). */
  serve(): void {
    this.#serve();
  }

  /** Lend what the pool has to the borrowers that wait, late ones first (P3). */
  #serve(): void {
    const waiting = [...this.#accounts.entries()]
      .filter(([, account]) => account.wanted !== undefined)
      .sort(([, a], [, b]) => Number(b.wanted?.late) - Number(a.wanted?.late));
    for (const [borrower, account] of waiting) {
      const available = this.available;
      if (available <= 0) return;
      const wanted = account.wanted;
      if (wanted === undefined) continue;
      const loan = Math.min(available, wanted.ready);
      if (!this.#lend(borrower, loan)) continue;
      account.wanted = undefined;
      account.held += loan;
    }
  }
}
