/**
 * The deliveries a push subscription's client can still take (flow control: never more unsettled
 * deliveries than its credit). A subscription owns one by default. When a client's subscription
 * spans the queues of a partitioned store, one engine per queue, the queues' subscriptions share a
 * single pool: whichever queue has messages spends it, so the client never holds more than its
 * credit in all, and no queue sits on credit another could use.
 */
export interface CreditPool {
  credits: number;
}

/** The most credit a subscription may hold: a client's grants are capped, never trusted to be sane. */
export const MAX_CREDITS = 1_048_576;

/** Add a client's grant to a pool, capped at {@link MAX_CREDITS}. */
export function grantCredits(pool: CreditPool, credits: number): void {
  pool.credits = Math.min(pool.credits + credits, MAX_CREDITS);
}
