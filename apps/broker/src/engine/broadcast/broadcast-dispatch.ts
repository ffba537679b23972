import {
  type BroadcastEvent,
  type BroadcastState,
  broadcastTransition,
  type Clock,
  DEAD_LETTERED_BY_CONSUMER_REASON,
  initialBroadcastState,
} from '@ricochet/core';
import { BrokerError, type DeliveredMessage } from '@ricochet/protocol';
import type { BrokerStore } from '../../store/broker-store.js';
import type { StoredMessage } from '../../store/records.js';
import type { BrokerMetrics } from '../broker-metrics.js';
import {
  type CreditLender,
  type CreditPool,
  grantLentCredits,
  type LentCredit,
  MAX_CREDIT_WANTED,
  settleLoan,
} from '../dispatch/credit-pool.js';
import type { DeliverySink } from '../dispatch/push-dispatch.js';
import type { Subscriptions } from '../dispatch/ready-source.js';
import { parseSubscriptions } from '../dispatch/subscriptions.js';
import { toDeliveredMessage } from '../lifecycle/delivered-message.js';
import type { EffectApplier } from '../lifecycle/effect-applier.js';
import {
  decodeReceiptHandle,
  encodeReceiptHandle,
  MAX_BROADCAST_CLIENT_ID_BYTES,
} from '../lifecycle/receipt-handle.js';
import {
  rejectionError,
  type SettleFailure,
  type SettleItem,
  type SettleVerb,
  unknownReceiptHandle,
} from '../lifecycle/settle-item.js';
import type { BroadcastRetention } from '../log/retention.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import type { TopicRegistry } from '../model/topic-registry.js';
import { type PushLease, PushLeaseTable } from '../timers/push-lease-table.js';
import type { TimerService } from '../timers/timer-service.js';
import {
  type BroadcastDelivery,
  type BroadcastInstance,
  heldKey,
  instanceKey,
} from './broadcast-instance.js';
import { BroadcastLedger } from './broadcast-ledger.js';
import { BroadcastSource } from './broadcast-source.js';

/** Messages one subscription takes per turn, and one pass hands out before yielding (as push). */
const TURN_MESSAGES = 32;
const PASS_MESSAGES = 256;

interface BroadcastSubscription extends LentCredit {
  readonly id: number;
  readonly instance: BroadcastInstance;
  readonly subscriptions: Subscriptions;
  readonly sink: DeliverySink;
  /** Deliveries the client can still take, perhaps shared with other queues (`credit-pool.ts`). */
  readonly pool: CreditPool;
}

export interface BroadcastSubscribeRequest {
  readonly subscriptions: Readonly<Record<string, string>>;
  readonly maxCachedMessages: number;
  /** The consumer's own `clientId` from `hello`; absent when it sent none. */
  readonly clientId?: string | undefined;
  readonly sink: DeliverySink;
  /** As push's `SubscribeRequest.creditPool`. @default a pool of its own, of `maxCachedMessages` */
  readonly creditPool?: CreditPool;
  /** As push's `SubscribeRequest.lender`: credit lent by a forwarding broker. */
  readonly lender?: CreditLender;
}

export interface BroadcastDispatchDeps {
  readonly store: BrokerStore;
  readonly clock: Clock;
  readonly timers: TimerService;
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
  readonly metrics: BrokerMetrics;
  /** Group counters move only through the applier, by core's effects. */
  readonly applier: Pick<EffectApplier, 'applyCounters' | 'flushTurn'>;
  /** Subscription ids are shared with clustering subscriptions, so a session's ids never clash. */
  readonly nextSubscriptionId: () => number;
}

/**
 * Broadcasting groups (B1): every instance — a push consumer's `clientId` — is delivered every
 * message of the group's topics, from its own position, under core's broadcast lifecycle: a failure
 * or a timeout is recorded and never retried; a release (C2) makes the message Ready again for the
 * same instance. Instances and their positions are kept by the {@link BroadcastLedger}.
 */
export class BroadcastDispatch {
  readonly #deps: BroadcastDispatchDeps;
  readonly #ledger: BroadcastLedger;
  readonly #subscriptions = new Map<number, BroadcastSubscription>();
  readonly #leases: PushLeaseTable;
  readonly #source: BroadcastSource;
  readonly #queued = new Set<BroadcastInstance>();
  /** Groups whose wake-ups (new messages) this dispatcher listens to. */
  readonly #woken = new WeakSet<GroupRuntime>();
  #closed = false;

  constructor(deps: BroadcastDispatchDeps) {
    this.#deps = deps;
    this.#ledger = new BroadcastLedger(deps);
    this.#leases = new PushLeaseTable(deps.clock, deps.timers);
    this.#leases.start((lease) => this.#onLeaseExpired(lease));
    this.#source = new BroadcastSource({
      clock: deps.clock,
      timers: deps.timers,
      topics: deps.topics,
      ledger: this.#ledger,
      onReady: (instance) => this.#wake(instance),
    });
  }

  /** Load the stored instances and forget the expired ones. */
  load(): void {
    this.#ledger.load();
  }

  /** The instances of a group, for its stats and message views. */
  instancesOf(group: string): readonly BroadcastInstance[] {
    return this.#ledger.instancesOf(group);
  }

  /** What retention needs to know of the instances (see {@link BroadcastRetention}). */
  get retention(): BroadcastRetention {
    return this.#ledger;
  }

  /**
   * Subscribe an instance of a broadcasting group. A new instance starts in each topic at the
   * group's `startFrom`, a known one where it stopped.
   * @throws BrokerError BAD_REQUEST when the consumer sent no `clientId`.
   */
  subscribe(group: GroupRuntime, request: BroadcastSubscribeRequest): number {
    if (request.clientId === undefined) {
      throw BrokerError.of(
        'BAD_REQUEST',
        `group "${group.name}" is broadcasting: the consumer must name itself with a clientId, stable across reconnects`,
        { group: group.name },
      );
    }
    if (Buffer.byteLength(request.clientId, 'utf8') > MAX_BROADCAST_CLIENT_ID_BYTES) {
      throw BrokerError.of(
        'BAD_REQUEST',
        `a broadcasting consumer's clientId must be at most ${MAX_BROADCAST_CLIENT_ID_BYTES} bytes of UTF-8`,
        { group: group.name },
      );
    }
    const subscriptions = parseSubscriptions(request.subscriptions);
    const instance = this.#ledger.join(group, request.clientId, [...subscriptions.keys()]);
    const subscription: BroadcastSubscription = {
      id: this.#deps.nextSubscriptionId(),
      instance,
      subscriptions,
      sink: request.sink,
      pool: request.creditPool ?? { credits: request.maxCachedMessages },
      lender: request.lender,
      wantSent: false,
      quiet: false,
    };
    this.#subscriptions.set(subscription.id, subscription);
    instance.subscriptionIds.add(subscription.id);
    if (!this.#woken.has(group)) {
      this.#woken.add(group);
      group.onWake(() => {
        for (const member of this.#ledger.instancesOf(group.name)) {
          if (member.subscriptionIds.size > 0) this.#wake(member);
        }
      });
    }
    this.#queue(instance);
    return subscription.id;
  }

  /** Stop deliveries to a subscription; false when it is not a broadcast one. */
  unsubscribe(subscriptionId: number): boolean {
    const subscription = this.#subscriptions.get(subscriptionId);
    if (!subscription) return false;
    this.#subscriptions.delete(subscriptionId);
    subscription.instance.subscriptionIds.delete(subscriptionId);
    this.#ledger.seen(subscription.instance);
    return true;
  }

  /** Grant more credit; false when the id is not a broadcast subscription. */
  credit(subscriptionId: number, credits: number): boolean {
    const subscription = this.#subscriptions.get(subscriptionId);
    if (!subscription) return false;
    grantLentCredits(subscription, credits);
    this.#queue(subscription.instance);
    return true;
  }

  /** Sessions ended: their subscriptions stop, and what they held is Ready again for the instance (C2). */
  endSubscriptions(subscriptionIds: readonly number[]): void {
    for (const id of subscriptionIds) {
      this.unsubscribe(id);
      for (const lease of this.#leases.heldBy(id)) this.#settleLease(lease, 'released');
    }
  }

  /** Settle broadcast deliveries (ack, nack, release); one failure per refused handle. */
  settle(items: readonly SettleItem[], outcome: SettleVerb, settledBy?: string): SettleFailure[] {
    const failures: SettleFailure[] = [];
    for (const [index, item] of items.entries()) {
      const decoded = decodeReceiptHandle(item.receiptHandle);
      // A handle naming a queue is the router's to settle, never this ledger's.
      const handle = decoded?.kind === 'broadcast' && decoded.queue === undefined ? decoded : undefined;
      const instance = handle && this.#ledger.get(instanceKey(handle.group, handle.clientId));
      const delivery = handle && instance?.held.get(heldKey(handle.topic, handle.offset));
      if (!handle || !instance || !delivery) {
        failures.push({ index, error: unknownReceiptHandle() });
        continue;
      }
      const atMs = this.#deps.clock.now();
      const { lease } = handle;
      const event: BroadcastEvent =
        outcome === 'ack'
          ? { type: 'succeeded', atMs, lease }
          : outcome === 'release'
            ? { type: 'released', atMs, lease }
            : {
                type: 'failed',
                atMs,
                lease,
                reason: item.reason ?? (item.deadLetter ? DEAD_LETTERED_BY_CONSUMER_REASON : 'FAILURE'),
              };
      const applied = this.#apply(instance, delivery, event, settledBy);
      if (applied) failures.push({ index, error: applied });
    }
    this.#deps.applier.flushTurn();
    return failures;
  }

  /** Stop timers and write every instance's position: the broker is closing. */
  close(): void {
    this.#closed = true;
    this.#leases.stop();
    this.#source.stop();
    this.#ledger.close();
  }

  // ─── Dispatch ─────────────────────────────────────────────────────────────────────────────

  /** New work for the instance (appends, a release, a delay due): lent subscriptions may ask for credit again. */
  #wake(instance: BroadcastInstance): void {
    for (const id of instance.subscriptionIds) {
      const member = this.#subscriptions.get(id);
      if (member) member.quiet = false;
    }
    this.#queue(instance);
  }

  #queue(instance: BroadcastInstance): void {
    if (this.#closed || this.#queued.has(instance)) return;
    this.#queued.add(instance);
    setImmediate(() => {
      this.#queued.delete(instance);
      this.#dispatch(instance);
    });
  }

  #dispatch(instance: BroadcastInstance): void {
    if (this.#closed) return;
    const members = [...instance.subscriptionIds].flatMap((id) => this.#subscriptions.get(id) ?? []);
    let handedOut = 0;
    const exhausted = new Set<BroadcastSubscription>();
    for (const member of members) {
      const batch: DeliveredMessage[] = [];
      while (member.pool.credits > 0 && handedOut < PASS_MESSAGES) {
        const want = Math.min(member.pool.credits, TURN_MESSAGES, PASS_MESSAGES - handedOut);
        const taken = this.#source.take(instance, member.subscriptions, want);
        if (taken.length === 0) {
          exhausted.add(member);
          break;
        }
        for (const { message, held } of taken) {
          const delivered = this.#lease(member, message, held);
          if (!delivered) continue;
          batch.push(delivered);
          member.pool.credits--;
          handedOut++;
        }
      }
      if (batch.length > 0) member.sink(member.id, batch);
    }
    for (const member of members) {
      if (!member.lender) continue;
      settleLoan(member, exhausted.has(member), () => {
        const ready = this.#source.readyHint(member.instance, member.subscriptions, MAX_CREDIT_WANTED);
        return ready === 0 ? undefined : { ready, late: member.instance.readyAgain.length > 0 };
      });
    }
    if (handedOut > 0) this.#ledger.changed(instance);
    if (handedOut >= PASS_MESSAGES) this.#queue(instance);
  }

  #lease(
    subscription: BroadcastSubscription,
    message: StoredMessage,
    held: BroadcastDelivery | undefined,
  ): DeliveredMessage | undefined {
    const { instance } = subscription;
    const nowMs = this.#deps.clock.now();
    const result = broadcastTransition(held?.state ?? initialBroadcastState(), {
      type: 'delivered',
      atMs: nowMs,
      leaseDurationMs: instance.group.config.consumptionTimeoutMs,
    });
    if (!result.ok || result.state.state !== 'inflight') return undefined;
    const state = result.state;
    const delivery: BroadcastDelivery = held ?? {
      topic: message.topic,
      offset: message.offset,
      messageId: message.messageId,
      state,
      deliveredAt: nowMs,
    };
    delivery.state = state;
    delivery.deliveredAt = nowMs;
    instance.held.set(heldKey(message.topic, message.offset), delivery);
    this.#leases.add({
      address: instance.addressOf(message.topic, message.offset),
      lease: state.lease,
      deadlineMs: state.leaseDeadlineMs,
      subscriptionId: subscription.id,
    });
    this.#deps.applier.applyCounters(instance.group, result.effects);
    this.#deps.metrics.delivered(instance.group.name);
    const handle = encodeReceiptHandle({
      kind: 'broadcast',
      group: instance.group.name,
      clientId: instance.clientId,
      topic: message.topic,
      offset: message.offset,
      lease: state.lease,
    });
    return toDeliveredMessage(message, state.deliveryAttempt, handle);
  }

  // ─── Settling ─────────────────────────────────────────────────────────────────────────────

  #onLeaseExpired(lease: PushLease): void {
    this.#settleLease(lease, 'timedOut');
  }

  #settleLease(lease: PushLease, type: 'released' | 'timedOut'): void {
    const instance = this.#ledger.get(lease.address.group);
    const delivery = instance?.held.get(heldKey(lease.address.topic, lease.address.offset));
    if (!instance || !delivery) return;
    const atMs = Math.max(this.#deps.clock.now(), type === 'timedOut' ? lease.deadlineMs : 0);
    this.#apply(instance, delivery, { type, atMs, lease: lease.lease });
  }

  /** Feed core the event and carry out its decision; the refusal as an error, or `undefined`. */
  #apply(
    instance: BroadcastInstance,
    delivery: BroadcastDelivery,
    event: BroadcastEvent,
    settledBy?: string,
  ): BrokerError | undefined {
    const inflight = delivery.state;
    const result = broadcastTransition(inflight, event);
    if (!result.ok) return rejectionError(result.rejection);
    this.#leases.remove(instance.addressOf(delivery.topic, delivery.offset));
    this.#deps.applier.applyCounters(instance.group, result.effects);
    this.#ledger.recordHistory(instance, delivery, inflight, result.state, settledBy);
    this.#ledger.changed(instance);
    delivery.state = result.state;
    if (result.state.state === 'ready') {
      instance.readyAgain.push(delivery);
      this.#deps.metrics.released(instance.group.name);
      this.#wake(instance);
      return undefined;
    }
    instance.held.delete(heldKey(delivery.topic, delivery.offset));
    this.#countConsumed(instance.group, result.state);
    return undefined;
  }

  #countConsumed(group: GroupRuntime, state: BroadcastState): void {
    if (state.state !== 'consumed') return;
    if (state.outcome === 'succeeded') {
      this.#deps.metrics.acked(group.name);
    } else {
      this.#deps.metrics.broadcastFailed(group.name);
    }
  }
}
