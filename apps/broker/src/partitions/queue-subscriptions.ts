import type { BrokerEngine } from '../engine/broker-engine.js';
import { type CreditPool, grantCredits } from '../engine/credit-pool.js';
import type { SubscribeRequest } from '../engine/push-dispatch.js';
import { deliveryOfQueue } from './merged-views.js';
import { QueueRotation } from './queue-choice.js';

/** A client's push subscription over every queue: one engine subscription per queue, one credit pool. */
interface RoutedSubscription {
  readonly group: string;
  readonly pool: CreditPool;
  /** Per queue, the id of the subscription its engine made. */
  readonly perQueue: readonly number[];
  /** Unsubscribed: no more deliveries, but its leases are released only when its session ends. */
  unsubscribed: boolean;
}

/**
 * The push subscriptions of a store split into queues (`PartitionRouter`): each client
 * subscription subscribes in every queue's engine, all spending one credit pool
 * (`engine/credit-pool.ts`), so the client never holds more than its credit in all and no queue
 * sits on credit another could use. Deliveries reach the client under the one id it was given,
 * their handles and offsets naming their queue.
 */
export class QueueSubscriptions {
  readonly #engines: readonly BrokerEngine[];
  readonly #subscriptions = new Map<number, RoutedSubscription>();
  /** Which queue is offered returned credit first. */
  readonly #rotation: QueueRotation;
  #lastId = 0;

  constructor(engines: readonly BrokerEngine[]) {
    this.#engines = engines;
    this.#rotation = new QueueRotation(engines.length);
  }

  subscribe(
    request: SubscribeRequest & { readonly group: string; readonly clientId?: string | undefined },
  ): number {
    const id = ++this.#lastId;
    const queues = this.#engines.length;
    const pool: CreditPool = { credits: request.maxCachedMessages };
    const perQueue: number[] = [];
    try {
      this.#engines.forEach((engine, queue) => {
        perQueue.push(
          engine.subscribe({
            ...request,
            creditPool: pool,
            sink: (_, messages) =>
              request.sink(
                id,
                messages.map((message) => deliveryOfQueue(message, queue, queues)),
              ),
          }),
        );
      });
    } catch (error) {
      // Every queue refuses alike (the same group and config); should one not, undo the others.
      perQueue.forEach((subscriptionId, queue) => {
        this.#engines[queue]?.endSubscriptions([subscriptionId]);
      });
      throw error;
    }
    this.#subscriptions.set(id, { group: request.group, pool, perQueue, unsubscribed: false });
    return id;
  }

  /**
   * Stop deliveries in every queue. The subscription is kept until its session ends: as in an
   * engine, what it holds stays leased until settled or released by {@link end}.
   */
  unsubscribe(subscriptionId: number): boolean {
    const routed = this.#subscriptions.get(subscriptionId);
    if (!routed || routed.unsubscribed) return false;
    routed.unsubscribed = true;
    routed.perQueue.forEach((id, queue) => {
      this.#engines[queue]?.unsubscribe(id);
    });
    return true;
  }

  /**
   * Add to the subscription's pool, and let every queue look again: any of them may spend it.
   * Queues with messages Ready again look first, so that late work goes first across queues as
   * it does within one (a retry never waits behind another queue's first deliveries, P3).
   */
  credit(subscriptionId: number, credits: number): void {
    const routed = this.#subscriptions.get(subscriptionId);
    if (!routed || routed.unsubscribed) return;
    grantCredits(routed.pool, credits);
    const order = this.#rotation.next();
    const late = order.filter((queue) => this.#engines[queue]?.hasReadyAgain(routed.group));
    for (const queue of [...late, ...order.filter((queue) => !late.includes(queue))]) {
      this.#engines[queue]?.credit(routed.perQueue[queue] as number, 0);
    }
  }

  /** Sessions ended: their subscriptions stop in every queue, and what they held is released (C2). */
  end(subscriptionIds: readonly number[]): void {
    const perQueue = this.#engines.map(() => [] as number[]);
    for (const id of subscriptionIds) {
      const routed = this.#subscriptions.get(id);
      if (!routed) continue;
      this.#subscriptions.delete(id);
      routed.perQueue.forEach((engineId, queue) => {
        perQueue[queue]?.push(engineId);
      });
    }
    perQueue.forEach((ids, queue) => {
      if (ids.length > 0) this.#engines[queue]?.endSubscriptions(ids);
    });
  }
}
