import {
  type CreditPool,
  creditPoolOf,
  grantCredits,
  type ServiceSubscribeRequest,
} from '../../engine/index.js';
import { CreditLending } from './credit-lending.js';
import { deliveryOfQueue } from './merged-views.js';
import { OwnedCreditLoan } from './owned-credit-loan.js';
import { QueueRotation } from './queue-addressing.js';
import type { RoutedQueue } from './routed-queue.js';

/** A client's push subscription over every queue: one subscription per queue, one credit pool. */
interface RoutedSubscription {
  /** The one id the client was given. */
  readonly id: number;
  /** What the client asked for, with the sink that tags deliveries with their queue. */
  readonly request: ServiceSubscribeRequest;
  readonly group: string;
  /** Owned scope (`subscribe.scope`): only the queues this broker owns, joined and left as they move. */
  readonly owned: boolean;
  readonly pool: CreditPool;
  /** The client's credit as lent to the queues other brokers own. */
  readonly lending: CreditLending;
  /** Per queue, the id of the subscription made there; -1 until it is made. */
  readonly perQueue: number[];
  /** Per queue, credit lent before the queue's subscription id was known: sent once it is. */
  readonly earlyLoans: Map<number, number>;
  /** An owned-scope subscription whose client lends it its credit (`request.lender`). */
  readonly loan: OwnedCreditLoan | undefined;
  /** Unsubscribed: no more deliveries, but its leases are released only when its session ends. */
  unsubscribed: boolean;
}

/** Where the router reports what fails in the background (ending a subscription in a remote queue). */
type ErrorReporter = (error: unknown, context: string) => void;

/**
 * The push subscriptions of a store split into queues (`PartitionRouter`): each client
 * subscription subscribes in every queue, all spending one credit pool (`engine/dispatch/credit-pool.ts`),
 * so the client never holds more than its credit in all and no queue sits on credit another could
 * use. The queues this broker owns spend the pool directly; those another broker owns borrow from
 * it (`credit-lending.ts`). Deliveries reach the client under the one id it was given, their
 * handles and offsets naming their queue.
 */
export class QueueSubscriptions {
  /** The router's queues, as routed now (the router replaces one when its owner changes). */
  readonly #queues: readonly RoutedQueue[];
  readonly #onError: ErrorReporter;
  readonly #subscriptions = new Map<number, RoutedSubscription>();
  /** Which queue is offered returned credit first. */
  readonly #rotation: QueueRotation;
  #lastId = 0;

  constructor(queues: readonly RoutedQueue[], onError: ErrorReporter) {
    this.#queues = queues;
    this.#onError = onError;
    this.#rotation = new QueueRotation(queues.length);
  }

  async subscribe(request: ServiceSubscribeRequest): Promise<number> {
    const id = ++this.#lastId;
    // The byte limit holds over the queues this broker owns; a remote owner's deliveries count
    // only toward the credit it borrows (docs/guides/scale-out.md).
    const pool: CreditPool = creditPoolOf(request.maxCachedMessages, request.maxCachedBytes);
    const lending = new CreditLending(
      pool,
      (queue, credits) => this.#lend(subscription, queue, credits),
      () => this.#spend(subscription),
    );
    const subscription: RoutedSubscription = {
      id,
      request,
      group: request.group,
      owned: request.scope === 'owned',
      pool,
      lending,
      perQueue: new Array<number>(this.#queues.length).fill(-1),
      earlyLoans: new Map(),
      loan:
        request.lender !== undefined && request.scope === 'owned'
          ? new OwnedCreditLoan(id, pool, request.lender, (queues) => this.#look(subscription, queues))
          : undefined,
      unsubscribed: false,
    };
    // Every queue at once: each remote one opens its first loan as it is asked, all in this turn,
    // before a local queue's first pass (its next turn) spends the pool; none takes it all, so
    // none opens owing the client credit it never granted (`CreditLending.expectLoans`).
    const queues = this.#queues.filter((queue) => servesIn(subscription, queue));
    lending.expectLoans(queues.filter((queue) => queue.engine === undefined).length);
    const made = await Promise.allSettled(queues.map((queue) => this.#subscribeIn(subscription, id, queue)));
    lending.expectLoans(0);
    const refused = made.find((result) => result.status === 'rejected');
    if (refused) {
      // Every queue refuses alike (the same group and config); should one not, undo the others.
      subscription.perQueue.forEach((subscriptionId, queue) => {
        const routed = this.#queues[queue];
        if (subscriptionId >= 0 && routed) this.#endIn(routed, [subscriptionId]);
      });
      throw refused.reason;
    }
    this.#subscriptions.set(id, subscription);
    subscription.loan?.settleEmpty();
    return id;
  }

  /**
   * `queue` is routed anew (`PartitionRouter.replaceQueue`): every client subscription ends in
   * the old one (what it held there is released, C2, and what a remote queue had not spent of its
   * loan comes back) and is made again in the new one, unless the client unsubscribed meanwhile.
   * An owned-scope subscription is made again only in a queue this broker now owns: a queue that
   * moved away is served by its new owner's owned-scope subscriptions, and one that moved here
   * joins this broker's.
   */
  async move(queue: number, old: RoutedQueue, next: RoutedQueue): Promise<void> {
    const moving = [...this.#subscriptions.entries()];
    const ended = moving.flatMap(([, routed]) => {
      const subscriptionId = routed.perQueue[queue] as number;
      return subscriptionId >= 0 ? [subscriptionId] : [];
    });
    if (ended.length > 0) this.#endIn(old, ended);
    for (const [id, routed] of moving) {
      routed.perQueue[queue] = -1;
      routed.earlyLoans.delete(queue);
      routed.lending.forget(queue);
      routed.loan?.leave(queue);
      if (routed.unsubscribed || !this.#subscriptions.has(id) || !servesIn(routed, next)) continue;
      try {
        await this.#subscribeIn(routed, id, next);
      } catch (error) {
        this.#onError(error, `could not subscribe again in queue ${queue} after its owner changed`);
      }
    }
  }

  /**
   * Stop deliveries in every queue. The subscription is kept until its session ends: as in an
   * engine, what it holds stays leased until settled or released by {@link end}.
   */
  async unsubscribe(subscriptionId: number): Promise<boolean> {
    const routed = this.#subscriptions.get(subscriptionId);
    if (!routed || routed.unsubscribed) return false;
    routed.unsubscribed = true;
    await Promise.all(
      routed.perQueue.map((id, queue) => (id < 0 ? undefined : this.#queues[queue]?.unsubscribe(id))),
    );
    return true;
  }

  /** Add to the subscription's pool, and spend it, late work first across queues (P3). */
  credit(subscriptionId: number, credits: number): void {
    const routed = this.#subscriptions.get(subscriptionId);
    if (!routed || routed.unsubscribed) return;
    grantCredits(routed.pool, credits);
    routed.loan?.lent();
    this.#spend(routed);
  }

  /** Sessions ended: their subscriptions stop in every queue, and what they held is released (C2). */
  end(subscriptionIds: readonly number[]): void {
    const perQueue = this.#queues.map(() => [] as number[]);
    for (const id of subscriptionIds) {
      const routed = this.#subscriptions.get(id);
      if (!routed) continue;
      this.#subscriptions.delete(id);
      routed.perQueue.forEach((queueId, queue) => {
        if (queueId >= 0) perQueue[queue]?.push(queueId);
      });
    }
    perQueue.forEach((ids, queue) => {
      const routed = this.#queues[queue];
      if (ids.length > 0 && routed) this.#endIn(routed, ids);
    });
  }

  /**
   * Spend the pool (the client granted credit, or a remote queue gave some back), late work first
   * across queues as within one (P3): the remote queues waiting with messages Ready again are lent
   * credit first, then the queues this broker owns with messages Ready again look. A local queue
   * looks in its engine's next turn (`engine/dispatch/push-dispatch.ts`), so the rest (remote queues that
   * wait with first deliveries only, and the other local queues) are served one turn later, once
   * those passes took what they had: else a first delivery elsewhere would take the credit a
   * retry here was waiting for.
   */
  #spend(routed: RoutedSubscription): void {
    if (routed.unsubscribed || routed.pool.credits <= 0) return;
    routed.lending.serveWaiting(true);
    const local = this.#rotation.next().filter((queue) => this.#queues[queue]?.engine !== undefined);
    const late = local.filter((queue) => this.#queues[queue]?.hasReadyAgain(routed.group));
    const rest = local.filter((queue) => !late.includes(queue));
    if (late.length === 0 && !routed.lending.holding) {
      routed.lending.serveWaiting();
      this.#look(routed, rest);
      return;
    }
    this.#look(routed, late);
    if (routed.lending.holding) return;
    routed.lending.holding = true;
    setImmediate(() => {
      routed.lending.holding = false;
      if (this.#subscriptions.get(routed.id) !== routed || routed.unsubscribed) return;
      routed.lending.serveWaiting();
      this.#look(routed, rest);
    });
  }

  /**
   * Let these local queues look for messages to spend the pool on. A subscription its client lends
   * to looks even once the pool is spent: a queue whose want the grant answered, but that another
   * queue spent first, asks its client again (`settleLoan`), or it would wait for credit forever.
   */
  #look(routed: RoutedSubscription, queues: readonly number[]): void {
    if (routed.unsubscribed || (routed.pool.credits <= 0 && routed.loan === undefined)) return;
    for (const queue of queues) {
      const subscriptionId = routed.perQueue[queue] as number;
      if (subscriptionId >= 0) this.#queues[queue]?.look(subscriptionId);
    }
  }

  /**
   * A loan to a remote queue. Its subscription may ask for credit in the same read as the answer
   * that names it, before the id is known here: such a loan waits for the id.
   */
  #lend(routed: RoutedSubscription, queue: number, credits: number): void {
    const subscriptionId = routed.perQueue[queue] as number;
    if (subscriptionId < 0) {
      routed.earlyLoans.set(queue, (routed.earlyLoans.get(queue) ?? 0) + credits);
      return;
    }
    this.#queues[queue]?.lend(subscriptionId, credits);
  }

  /** Subscribe in `queue` for the client subscription `id`, and send it what was lent to it before its id was known. */
  async #subscribeIn(routed: RoutedSubscription, id: number, queue: RoutedQueue): Promise<void> {
    const queues = this.#queues.length;
    const { lender: _, ...request } = routed.request;
    const loan = routed.loan;
    const subscriptionId = await queue.subscribe({
      ...request,
      creditPool: routed.pool,
      lending: routed.lending,
      // Only a queue this broker owns borrows: an owned-scope subscription is made in no other.
      ...(loan !== undefined && queue.engine !== undefined ? { lender: loan.lenderFor(queue.queue) } : {}),
      sink: (_, messages) => {
        loan?.delivered(queue.queue);
        routed.request.sink(
          id,
          messages.map((message) => deliveryOfQueue(message, queue.queue, queues)),
        );
      },
    });
    routed.perQueue[queue.queue] = subscriptionId;
    const early = routed.earlyLoans.get(queue.queue);
    routed.earlyLoans.delete(queue.queue);
    if (early !== undefined && subscriptionId >= 0) queue.lend(subscriptionId, early);
  }

  #endIn(routed: RoutedQueue, subscriptionIds: readonly number[]): void {
    const report = (error: unknown) =>
      this.#onError(error, `could not end subscriptions in queue ${routed.queue}`);
    try {
      // A local queue ends them now, as one engine does when a session closes; a remote one later.
      const ended = routed.end(subscriptionIds);
      if (ended instanceof Promise) ended.catch(report);
    } catch (error) {
      report(error);
    }
  }
}

/**
 * Whether a client subscription is made in `queue`: every queue for one over every queue (those
 * owned elsewhere forwarded); for an owned-scope one, the queues this broker owns (`engine` set),
 * so none of its deliveries is forwarded.
 */
function servesIn(routed: RoutedSubscription, queue: RoutedQueue): boolean {
  return !routed.owned || queue.engine !== undefined;
}
