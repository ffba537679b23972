import type { DeliveredMessage, SubscribeFrame } from '@ricochet/protocol';
import type { FakeLeases } from './fake-leases.js';
import type { FakeSession } from './fake-session.js';

/** The most messages the default push dispatch puts in one `deliver`, as the real broker does. */
const DELIVER_FRAME_MESSAGES = 256;

/**
 * A push subscription the default `subscribe` handler opened. The default `credit`, `ack`,
 * `nack`, `release` and `unsubscribe` handlers keep it up to date, and when its session ends its
 * unsettled messages go back to `FakeBroker.pushReady` (C2).
 */
export interface FakeSubscription {
  readonly subscriptionId: number;
  readonly session: FakeSession;
  readonly frame: SubscribeFrame;
  /** How many more messages it may be delivered. */
  credits: number;
  /** False after `unsubscribe`, or once its session ended. */
  active: boolean;
  /** Receipt handles delivered to it and not settled yet. */
  readonly unsettled: Set<string>;
  /** The most unsettled deliveries it ever held at once. */
  maxUnsettled: number;
}

/**
 * The fake broker's push side: subscriptions with their credit, the messages ready for them, and
 * the deliveries not settled yet. Like the real broker, it delivers in order to active
 * subscriptions with credit, returns released messages to the front of the line, and releases
 * every unsettled delivery of a session that ended (C2).
 */
export class FakePushDispatch {
  /** Every subscription opened, in order. */
  readonly subscriptions: FakeSubscription[] = [];
  /** Messages waiting for a subscription with credit, oldest first. */
  readonly ready: DeliveredMessage[] = [];
  readonly #leases: FakeLeases;
  /** Push receipt handles not settled yet → their subscription and the message as it was ready. */
  readonly #delivered = new Map<string, { subscription: FakeSubscription; message: DeliveredMessage }>();
  #nextSubscriptionId = 0;

  constructor(leases: FakeLeases) {
    this.#leases = leases;
  }

  /** Open a subscription for `frame`, its initial credit `maxCachedMessages`. */
  subscribe(frame: SubscribeFrame, session: FakeSession): FakeSubscription {
    this.#nextSubscriptionId += 1;
    const subscription: FakeSubscription = {
      subscriptionId: this.#nextSubscriptionId,
      session,
      frame,
      credits: frame.maxCachedMessages,
      active: true,
      unsettled: new Set(),
      maxUnsettled: 0,
    };
    this.subscriptions.push(subscription);
    return subscription;
  }

  /** The active subscription `subscriptionId` of `session`, if there is one. */
  subscriptionOf(session: FakeSession, subscriptionId: number): FakeSubscription | undefined {
    return this.subscriptions.find(
      (subscription) =>
        subscription.active &&
        subscription.session === session &&
        subscription.subscriptionId === subscriptionId,
    );
  }

  /** Make `messages` ready, after those already waiting. */
  add(messages: readonly DeliveredMessage[]): void {
    this.ready.push(...messages);
  }

  /**
   * A push delivery's lease ended with `outcome`: it leaves its subscription's unsettled set, and
   * a released one is returned so that the caller can make it ready again.
   */
  settled(receiptHandle: string, outcome: 'settle' | 'release'): DeliveredMessage | undefined {
    const delivery = this.#delivered.get(receiptHandle);
    if (delivery === undefined) return undefined;
    this.#delivered.delete(receiptHandle);
    delivery.subscription.unsettled.delete(receiptHandle);
    return outcome === 'release' ? delivery.message : undefined;
  }

  /** Make released messages ready again, ahead of the others, in the order given. */
  requeue(messages: readonly DeliveredMessage[]): void {
    this.ready.unshift(...messages);
  }

  /** Deliver ready messages to active subscriptions, in order, as far as their credit goes. */
  dispatch(): void {
    for (const subscription of this.subscriptions) {
      while (subscription.active && subscription.credits > 0 && this.ready.length > 0) {
        const count = Math.min(subscription.credits, DELIVER_FRAME_MESSAGES);
        const messages = this.ready.splice(0, count).map((message) => {
          const leased = this.#leases.lease(message);
          this.#delivered.set(leased.receiptHandle, { subscription, message });
          subscription.unsettled.add(leased.receiptHandle);
          return leased;
        });
        subscription.credits -= messages.length;
        subscription.maxUnsettled = Math.max(subscription.maxUnsettled, subscription.unsettled.size);
        subscription.session.send({ type: 'deliver', subscriptionId: subscription.subscriptionId, messages });
      }
    }
  }

  /** C2: a session ended; its subscriptions stop and their unsettled messages are ready again. */
  endSession(session: FakeSession): void {
    const released: DeliveredMessage[] = [];
    for (const subscription of this.subscriptions) {
      if (subscription.session !== session) continue;
      subscription.active = false;
      for (const receiptHandle of subscription.unsettled) {
        const delivery = this.#delivered.get(receiptHandle);
        this.#delivered.delete(receiptHandle);
        this.#leases.end(receiptHandle);
        if (delivery !== undefined) released.push(delivery.message);
      }
      subscription.unsettled.clear();
    }
    this.requeue(released);
    this.dispatch();
  }
}
