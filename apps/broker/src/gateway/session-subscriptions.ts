import { BrokerError } from '@ricochet/protocol';
import type { MessagingService } from '../engine/index.js';

/**
 * A session's push subscriptions: those taking deliveries, which its `credit` and `unsubscribe`
 * frames may name, and every one it opened, unsubscribed ones included, whose leases are released
 * when the session ends (C2), since a consumer unsubscribes before it disconnects.
 */
export class SessionSubscriptions {
  readonly #active = new Set<number>();
  readonly #opened = new Set<number>();

  /** Subscriptions taking deliveries (the per-connection cap counts these). */
  get active(): number {
    return this.#active.size;
  }

  /** Whether `subscriptionId` is this session's and takes deliveries (credit for any other is ignored). */
  has(subscriptionId: number): boolean {
    return this.#active.has(subscriptionId);
  }

  add(subscriptionId: number): void {
    this.#active.add(subscriptionId);
    this.#opened.add(subscriptionId);
  }

  /**
   * Stop deliveries (what it holds stays leased until settled, or until the session ends); with
   * `release`, end it now, unsubscribed already or not, releasing what it holds.
   * @throws BrokerError BAD_REQUEST for a subscription this session did not open.
   */
  async unsubscribe(engine: MessagingService, subscriptionId: number, release: boolean): Promise<void> {
    const active = this.#active.delete(subscriptionId);
    if (release) {
      if (!this.#opened.delete(subscriptionId)) throw notOnThisSession(subscriptionId);
      engine.endSubscriptions([subscriptionId]);
      return;
    }
    if (!active || !(await engine.unsubscribe(subscriptionId))) throw notOnThisSession(subscriptionId);
  }

  /** The session ended: every subscription it opened ends, and what each held is released (C2). */
  endAll(engine: MessagingService): void {
    engine.endSubscriptions([...this.#opened]);
    this.#active.clear();
    this.#opened.clear();
  }
}

function notOnThisSession(subscriptionId: number): BrokerError {
  return BrokerError.of('BAD_REQUEST', `no subscription ${subscriptionId} on this session`);
}
