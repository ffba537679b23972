import type { CreditLender, CreditPool } from '../../engine/index.js';

/**
 * An owned-scope subscription whose client lends it credit (the `creditLending` feature,
 * docs/protocol/README.md#credit-lending): to the client it is one borrower, as a remote queue's
 * subscription is to a forwarding broker (`credit-lending.ts`), though it spans every queue this
 * broker owns, each spending the one pool. Each queue's subscription settles its loan after a
 * pass as any lent subscription does (`engine/dispatch/credit-pool.ts`'s `settleLoan`), through
 * the lender this hands it, and this speaks for all of them:
 *
 * - A queue that wants credit asks the client, unless a want is already out (and this one is no
 *   later, P3): one `creditWanted` until the client lends.
 * - A queue that gives credit back only marks itself idle while another queue may still spend it:
 *   the credit goes back into the pool and those queues look. When every queue is idle (each
 *   gave back since it last had work), the client gets it back (`creditReturned`). A queue is busy
 *   again when it delivers or wants, so an idle subscription never passes credit between its
 *   queues with nothing to spend it on.
 */
export class OwnedCreditLoan {
  /** The id the client knows the subscription by. */
  readonly #subscriptionId: number;
  readonly #pool: CreditPool;
  readonly #lender: CreditLender;
  readonly #look: (queues: readonly number[]) => void;
  /** Per queue in the subscription, whether it is idle: it gave credit back, and had no work since. */
  readonly #idle = new Map<number, boolean>();
  /** The `creditWanted` sent and not answered yet, and whether it said a retry waits. */
  #asked: { readonly late: boolean } | undefined;

  /** `look`: let these queues spend what the pool holds. */
  constructor(
    subscriptionId: number,
    pool: CreditPool,
    lender: CreditLender,
    look: (queues: readonly number[]) => void,
  ) {
    this.#subscriptionId = subscriptionId;
    this.#pool = pool;
    this.#lender = lender;
    this.#look = look;
  }

  /** The lender of `queue`'s subscription, which joins the loan busy. */
  lenderFor(queue: number): CreditLender {
    this.#idle.set(queue, false);
    return {
      wanted: (_, ready, late) => this.#wanted(queue, ready, late),
      returned: (_, credits) => this.#returned(queue, credits),
    };
  }

  /** `queue`'s subscription ended (the queue moved away). */
  leave(queue: number): void {
    this.#idle.delete(queue);
    this.settleEmpty();
  }

  /**
   * With no queue of its own (this broker owns none now, or none yet), nothing would ever spend
   * or give back what the subscription holds: it goes back to the client at once.
   */
  settleEmpty(): void {
    if (this.#idle.size > 0 || this.#pool.credits <= 0) return;
    const credits = this.#pool.credits;
    this.#pool.credits = 0;
    this.#asked = undefined;
    this.#lender.returned(this.#subscriptionId, credits);
  }

  /** `queue` delivered: it has work. */
  delivered(queue: number): void {
    if (this.#idle.has(queue)) this.#idle.set(queue, false);
  }

  /** The client lent credit (`credit`): a new want may be sent. */
  lent(): void {
    this.#asked = undefined;
  }

  #wanted(queue: number, ready: number, late: boolean): void {
    this.#idle.set(queue, false);
    // A want that says a retry waits goes out even after one that did not: the client serves it first (P3).
    if (this.#asked !== undefined && (this.#asked.late || !late)) return;
    this.#asked = { late };
    this.#lender.wanted(this.#subscriptionId, ready, late);
  }

  #returned(queue: number, credits: number): void {
    this.#idle.set(queue, true);
    const busy = [...this.#idle].filter(([, idle]) => !idle).map(([busyQueue]) => busyQueue);
    if (busy.length === 0) {
      this.#lender.returned(this.#subscriptionId, credits);
      return;
    }
    this.#pool.credits += credits;
    this.#look(busy);
  }
}
