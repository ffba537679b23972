/** How {@link CreditLoans} lends a borrower credit (a `credit` frame); `false` when it cannot now (its session is gone). */
export type LendCredit<B> = (borrower: B, credits: number) => boolean;

/** A borrower's account: what its broker holds on loan, and what it asked for. */
interface Account {
  held: number;
  wanted: { readonly ready: number; readonly late: boolean } | undefined;
}

/** Options of {@link CreditLoans}. */
export interface CreditLoansOptions<B> {
  /** The most the pool may be: the consumer's `maxCachedMessages` less what subscriptions that do not borrow may hold. */
  readonly capacity: () => number;
  /** The pool it starts at and never goes below (the consumer's `2 × concurrency`). */
  readonly floor: number;
  /** The deliveries the consumer holds unsettled now (running and cached), whichever subscription brought them. */
  readonly outstanding: () => number;
  readonly lend: LendCredit<B>;
}

/**
 * A push consumer's credit as one pool lent to its owned-scope subscriptions, one per queue owner
 * (docs/protocol/README.md#credit-lending): the client's side of what a forwarding broker does
 * with a client's credit over other brokers' queues. Each subscription (a borrower) opens with a
 * first loan, asks for more when its broker has messages Ready and it has none (`creditWanted`,
 * {@link wanted}), and gives back what its broker cannot spend (`creditReturned`, {@link returned}).
 *
 * - **Never more than the pool in all**: a borrower's credit counts against the pool from the
 *   loan until the delivery that spent it is settled (or the credit comes back), so the credit
 *   held by all the brokers and the deliveries the consumer holds together never exceed the pool.
 *   A first loan is what the pool has left, 0 once it is spent (the borrower asks when its broker
 *   has messages), so a consumer subscribed on more owners than its pool holds never holds more
 *   than `maxCachedMessages`, and a retry waits for no more results than on one broker.
 *   The pool is sized as one subscription's credit window is (`CreditWindow`): it starts at its
 *   floor, doubles when the listeners starve while a broker waits for credit, and shrinks when
 *   the cache holds more than the listeners need, never above its capacity (`maxCachedMessages`).
 * - **Retries first (P3)**: credit that comes back goes to the borrowers that said a retry waits
 *   (`late`) before the others, so a retry at one owner is delivered before later first
 *   deliveries at another, whose broker holds no credit it was not lent.
 * - **No ping-pong**: credit is lent only to a borrower that asked, never pushed; a broker that
 *   gave its credit back asks again only once new work reaches it.
 */
export class CreditLoans<B> {
  readonly #options: CreditLoansOptions<B>;
  readonly #accounts = new Map<B, Account>();
  /** The pool now, from the floor up to the capacity (the window, as `CreditWindow` keeps one subscription's). */
  #size: number;
  /** Results sent in the current epoch. */
  #epochSettled = 0;
  /** The fewest startable messages cached at a result this epoch; 0 once the listeners ran dry. */
  #epochMinWaiting = Number.POSITIVE_INFINITY;

  constructor(options: CreditLoansOptions<B>) {
    this.#options = options;
    this.#size = this.#floor;
  }

  get #floor(): number {
    return Math.max(1, this.#options.floor);
  }

  /** The pool now: what borrowers may hold and the consumer have out in all. */
  get size(): number {
    return Math.max(1, Math.min(this.#size, this.#options.capacity()));
  }

  /** What the pool has left to lend now (below 0 only while the pool shrinks under what is out). */
  get available(): number {
    let taken = this.#options.outstanding();
    for (const account of this.#accounts.values()) taken += account.held;
    return this.size - taken;
  }

  /**
   * The listeners ran out of work (a listener free, nothing startable). If a borrower waits for
   * credit the pool does not have, the pool, not the brokers, made them wait: it doubles, up to
   * its capacity, and the waiting are lent the difference. An idle consumer (no want) keeps it.
   */
  starved(): void {
    this.#epochMinWaiting = 0;
    const waits = [...this.#accounts.values()].some((account) => account.wanted !== undefined);
    if (!waits || this.available > 0) return;
    this.#size = Math.min(this.#options.capacity(), this.size * 2);
    this.#serve();
  }

  /** Whether `borrower` has an account (it subscribed, and was not forgotten since). */
  has(borrower: B): boolean {
    return this.#accounts.has(borrower);
  }

  /**
   * `borrower` subscribes (again): whatever it had is forgotten (its last session's deliveries
   * were released, C2), and its first loan, `subscribe.maxCachedMessages`, is up to `credits`
   * of what is left: 0 when the pool is spent (the borrower asks once it has messages).
   */
  open(borrower: B, credits: number): number {
    this.#accounts.delete(borrower);
    const loan = Math.max(0, Math.min(credits, this.available));
    this.#accounts.set(borrower, { held: loan, wanted: undefined });
    return loan;
  }

  /** `deliver` from `borrower`: `count` credits it held are deliveries the consumer holds now. */
  delivered(borrower: B, count: number): void {
    const account = this.#accounts.get(borrower);
    if (account === undefined) return;
    account.held = Math.max(0, account.held - count);
  }

  /**
   * The results of `count` of `borrower`'s deliveries were sent, with `waiting` startable messages
   * cached: their credit is the pool's again. Over a pool's worth of results (an epoch) in which
   * the cache never ran below N messages, those N were not needed to keep the listeners busy: the
   * pool shrinks by half of them, no lower than its floor, so that a slow consumer does not take
   * first deliveries a retry elsewhere would wait behind (P3).
   */
  settled(count: number, waiting = Number.POSITIVE_INFINITY): void {
    // A result frees credit for a retry that waits (P3), even while the pool is over-committed
    // (it shrank below what was out, or an earlier subscription's deliveries fill it): it grows,
    // within its capacity, by what it lacks, as one subscription's credit would bring the retry next.
    const available = this.available;
    if (count > 0 && available <= 0 && this.#lateWaits()) {
      this.#size = Math.min(this.#options.capacity(), this.size + 1 - available);
    }
    this.#epochSettled += count;
    if (waiting < this.#epochMinWaiting) this.#epochMinWaiting = waiting;
    if (this.#epochSettled >= this.size) {
      if (this.#epochMinWaiting > 0 && Number.isFinite(this.#epochMinWaiting)) {
        this.#size = Math.max(this.#floor, this.size - Math.ceil(this.#epochMinWaiting / 2));
      }
      this.#epochSettled = 0;
      this.#epochMinWaiting = Number.POSITIVE_INFINITY;
    }
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

  /** `borrower`'s subscription is gone (its session ended, or it was retired): what it held comes back. */
  forget(borrower: B): void {
    if (this.#accounts.delete(borrower)) this.#serve();
  }

  /** Lend what the pool has to the borrowers that wait (one that could not be lent to may be now). */
  serve(): void {
    this.#serve();
  }

  #lateWaits(): boolean {
    return [...this.#accounts.values()].some((account) => account.wanted?.late === true);
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
      if (!this.#options.lend(borrower, loan)) continue;
      account.wanted = undefined;
      account.held += loan;
    }
  }
}
