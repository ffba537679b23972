/**
 * The deliveries a push subscription's client can still take (flow control: never more unsettled
 * deliveries than its credit). A subscription owns one by default. When a client's subscription
 * spans the queues of a partitioned store, one engine per queue, the queues' subscriptions share a
 * single pool: whichever queue has messages spends it, so the client never holds more than its
 * credit in all, and no queue sits on credit another could use.
 */
export interface CreditPool {
  credits: number;
  /**
   * How many grants came to the pool (of any size but 0): a subscription that shares it and asked
   * for credit knows its want was answered when this moved, even if another queue spent the grant.
   */
  grants?: number;
  /** The bytes the client lets be out to it unsettled (`subscribe.maxCachedBytes`), when it set a limit. */
  readonly bytes?: ByteCredit;
}

/**
 * A client's limit on the bytes of its unsettled deliveries (`deliveredMessageBytes`), beside the
 * count its credit keeps. The broker keeps this account itself, from deliveries and the ends of
 * their leases, so no byte figure crosses the wire after `subscribe` and none can drift.
 */
export interface ByteCredit {
  readonly maxBytes: number;
  /** Bytes delivered through the pool whose leases have not ended. */
  outBytes: number;
}

/** A pool of `credits`, with a byte limit when `maxBytes` is set. */
export function creditPoolOf(credits: number, maxBytes: number | undefined): CreditPool {
  return maxBytes === undefined ? { credits } : { credits, bytes: { maxBytes, outBytes: 0 } };
}

/** The most credit a subscription may hold: a client's grants are capped, never trusted to be sane. */
export const MAX_CREDITS = 1_048_576;

/** Add a client's grant to a pool, capped at {@link MAX_CREDITS}. */
export function grantCredits(pool: CreditPool, credits: number): void {
  pool.credits = Math.min(pool.credits + credits, MAX_CREDITS);
  if (credits > 0) pool.grants = (pool.grants ?? 0) + 1;
}

/**
 * A client's grant to a subscription that may borrow: into its pool, and a want it sent is
 * answered once credit came, to it or to the pool it shares (whose holder looks with 0), so the
 * next time the pool runs dry it may ask again.
 */
export function grantLentCredits(member: LentCredit, credits: number): void {
  grantCredits(member.pool, credits);
  if (credits > 0 || member.pool.credits > 0) member.wantSent = false;
}

/**
 * Between brokers (a peer session, `hello.queue`): the credit of a subscription is lent by the
 * forwarding broker that holds its client's credit, over every queue. The subscription asks for
 * credit when it has messages Ready and none left ({@link wanted}), and gives back what it holds
 * when it has nothing to deliver ({@link returned}), so credit never sits in a queue with nothing
 * to spend it on while another queue has work.
 */
export interface CreditLender {
  /** Messages are Ready for the subscription and it has no credit: about `ready` of them, `late` if any is Ready again (P3). */
  wanted(subscriptionId: number, ready: number, late: boolean): void;
  /** The subscription had nothing to deliver: its `credits` are no longer its own. */
  returned(subscriptionId: number, credits: number): void;
}

/** The most a `wanted` asks for at once. */
export const MAX_CREDIT_WANTED = 256;

/** A subscription's side of a loan (push and broadcast alike): its credit, and where the talk with its lender stands. */
export interface LentCredit {
  readonly id: number;
  readonly pool: CreditPool;
  /** Whoever lends the credit, for a peer session's subscription; `undefined` for a client's own. */
  readonly lender: CreditLender | undefined;
  /** A `wanted` was sent and no credit came since. */
  wantSent: boolean;
  /**
   * The pool's {@link CreditPool.grants} when that `wanted` was sent. A pool shared by the queues
   * of one subscription may be granted credit that another queue spends before this one looks:
   * the want was answered all the same, and this queue asks again if it still has none.
   */
  wantSentAtGrants?: number;
  /** That `wanted` said a retry waits: a later one, once a retry falls due, says so (P3). */
  wantedLate?: boolean;
  /**
   * The credit was returned for want of messages: no `wanted` until new work wakes the
   * subscription, so that messages the Ready check sees but a pass cannot deliver (a blocked FIFO
   * head) never make the two brokers trade credit back and forth.
   */
  quiet: boolean;
}

/**
 * After a dispatch pass, a subscription with lent credit gives back what it could not spend (after
 * the deliveries that spent the rest, on the same connection) when the pass found nothing for it
 * (`exhausted`), or asks for credit if it has none and `readyNow` finds messages Ready for it,
 * once, and once more should a retry fall due while it waits.
 */
export function settleLoan(
  member: LentCredit,
  exhausted: boolean,
  readyNow: () => { readonly ready: number; readonly late: boolean } | undefined,
): void {
  const lender = member.lender;
  if (lender === undefined) return;
  if (member.wantSent && (member.pool.grants ?? 0) !== member.wantSentAtGrants) member.wantSent = false;
  if (member.pool.credits > 0) {
    if (!exhausted) return;
    const credits = member.pool.credits;
    member.pool.credits = 0;
    member.quiet = true;
    member.wantSent = false;
    lender.returned(member.id, credits);
    return;
  }
  if (member.quiet || (member.wantSent && member.wantedLate === true)) return;
  const wanted = readyNow();
  if (wanted === undefined) return;
  // Asked already for first deliveries only: ask again only now that a retry waits, so that the
  // lender serves it before them (P3).
  if (member.wantSent && !wanted.late) return;
  member.wantSent = true;
  member.wantSentAtGrants = member.pool.grants ?? 0;
  member.wantedLate = wanted.late;
  lender.wanted(member.id, wanted.ready, wanted.late);
}
