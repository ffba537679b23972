import { type DeliveredMessage, deliveredMessageBytes } from '@ricochet/protocol';
import type { LeaseGrant } from '../lifecycle/lease-grant.js';
import type { Settlement } from '../lifecycle/settlement.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import { CATCH_UP_TURN_BUDGET_MS, realWorkClock, TURN_BUDGET_MS } from '../timers/loop-budget.js';
import type { PushLease, PushLeaseTable } from '../timers/push-lease-table.js';
import { ByteAllowance } from './byte-allowance.js';
import {
  type CreditLender,
  type CreditPool,
  creditPoolOf,
  grantLentCredits,
  type LentCredit,
  MAX_CREDIT_WANTED,
  settleLoan,
} from './credit-pool.js';
import type { ReadySource, Subscriptions } from './ready-source.js';
import { parseSubscriptions } from './subscriptions.js';

/** Where a subscription's deliveries go: the session that subscribed. */
export type DeliverySink = (subscriptionId: number, messages: DeliveredMessage[]) => void;

/** Messages one subscription takes per turn of the round-robin, so instances share fairly. */
const TURN_MESSAGES = 32;
/**
 * Messages one dispatch pass hands out at most before yielding the event loop; it stops sooner once
 * it has held the loop {@link TURN_BUDGET_MS} (checked after each subscription's turn): a long pass
 * delays everything else waiting on the loop — due retries, acks, new sends — by its length.
 */
const PASS_MESSAGES = 256;
/**
 * A pass that starts with more messages Ready again (retries, expired leases, due delays) than one
 * pass hands out is catching up on late work, as the scheduler does when it fires it: it may hand
 * out four passes' worth in up to {@link CATCH_UP_TURN_BUDGET_MS}.
 */
const CATCH_UP_PASS_MESSAGES = 1_024;
/** Messages per `deliver` frame. */
const FRAME_MESSAGES = 256;

interface PushSubscription extends LentCredit {
  readonly id: number;
  readonly group: GroupRuntime;
  readonly subscriptions: Subscriptions;
  readonly consumerId: string;
  readonly sink: DeliverySink;
  /** Deliveries the client can still take (flow control), perhaps shared with other queues. */
  readonly pool: CreditPool;
}

export interface SubscribeRequest {
  readonly subscriptions: Readonly<Record<string, string>>;
  readonly maxCachedMessages: number;
  /**
   * The most bytes of unsettled deliveries the client holds (`subscribe.maxCachedBytes`), when it
   * set a limit; ignored with `creditPool`, which carries its own. @default no limit but the count
   */
  readonly maxCachedBytes?: number | undefined;
  readonly consumerId: string;
  readonly sink: DeliverySink;
  /**
   * The credit this subscription spends, shared with the same client subscription's other queues
   * (see `credit-pool.ts`); its holder grants it. @default a pool of its own, of `maxCachedMessages`
   */
  readonly creditPool?: CreditPool;
  /**
   * A peer session's subscription: its credit is lent by the forwarding broker, which this asks for
   * more and gives back to (`credit-pool.ts`). Its `maxCachedMessages` is the first loan.
   */
  readonly lender?: CreditLender;
}

export interface PushDispatchDeps {
  readonly groups: GroupRegistry;
  readonly readySource: ReadySource;
  readonly leaseGrant: LeaseGrant;
  /** Releases what an ended session held (C2). */
  readonly settlement: Settlement;
  readonly pushLeases: PushLeaseTable;
  /** Subscription ids are shared with broadcast subscriptions, so a session's ids never clash. */
  readonly nextSubscriptionId: () => number;
  /** What a pass's time budget is measured on, in ms. @default realWorkClock */
  readonly workClock?: () => number;
}

/**
 * Push consumption (P1–P6, C2): subscriptions with credit-based flow control — never more
 * unsettled deliveries than the client's credit — spread round-robin across a group's connected
 * instances, many deliveries per frame.
 */
export class PushDispatch {
  readonly #deps: PushDispatchDeps;
  readonly #subscriptions = new Map<number, PushSubscription>();
  readonly #byGroup = new Map<GroupRuntime, PushSubscription[]>();
  /** Groups with a dispatch pass already queued for this turn. */
  readonly #queued = new Set<GroupRuntime>();
  /** Per group, which member the next pass starts with, so no instance is always served first. */
  readonly #rotation = new WeakMap<GroupRuntime, number>();
  #closed = false;

  constructor(deps: PushDispatchDeps) {
    this.#deps = deps;
    deps.pushLeases.onEnded((lease) => this.#leaseEnded(lease));
  }

  /** Start a push subscription of a clustering group; deliveries begin at once, up to `maxCachedMessages`. */
  subscribe(group: GroupRuntime, request: SubscribeRequest): number {
    const subscriptions = parseSubscriptions(request.subscriptions);
    for (const topic of subscriptions.keys()) this.#deps.readySource.ensureCursor(group, topic);
    const subscription: PushSubscription = {
      id: this.#deps.nextSubscriptionId(),
      group,
      subscriptions,
      consumerId: request.consumerId,
      sink: request.sink,
      pool: request.creditPool ?? creditPoolOf(request.maxCachedMessages, request.maxCachedBytes),
      lender: request.lender,
      wantSent: false,
      quiet: false,
    };
    this.#subscriptions.set(subscription.id, subscription);
    let members = this.#byGroup.get(group);
    if (!members) {
      members = [];
      this.#byGroup.set(group, members);
      group.onWake(() => this.#onWake(group));
    }
    members.push(subscription);
    this.#queue(group);
    return subscription.id;
  }

  /** Stop deliveries to a subscription. Its leases stay until settled or the session ends. */
  unsubscribe(subscriptionId: number): boolean {
    const subscription = this.#subscriptions.get(subscriptionId);
    if (!subscription) return false;
    this.#subscriptions.delete(subscriptionId);
    const members = this.#byGroup.get(subscription.group);
    if (members) members.splice(members.indexOf(subscription), 1);
    return true;
  }

  /**
   * Grant more credit; unknown subscriptions are ignored (the credit may race an unsubscribe). A
   * grant of 0 only looks again: a shared pool may have been refilled by its holder.
   */
  credit(subscriptionId: number, credits: number): void {
    const subscription = this.#subscriptions.get(subscriptionId);
    if (!subscription) return;
    grantLentCredits(subscription, credits);
    this.#queue(subscription.group);
  }

  /** A session ended: stop its subscriptions and release what they held (C2). */
  endSubscriptions(subscriptionIds: readonly number[]): void {
    for (const id of subscriptionIds) {
      this.unsubscribe(id);
      for (const lease of this.#deps.pushLeases.heldBy(id)) {
        this.#deps.settlement.release(lease.address, lease.lease);
      }
    }
  }

  close(): void {
    this.#closed = true;
  }

  /**
   * A delivery's lease ended (settled, released, expired, replaced): the bytes it held against its
   * subscription's byte limit are no longer out, and the subscription may be sent more. The lease
   * carries its bytes, so this costs nothing where no limit was set. A subscription gone meanwhile
   * has nobody left to send to.
   */
  #leaseEnded(lease: PushLease): void {
    if (lease.heldBytes === undefined) return;
    const subscription = this.#subscriptions.get(lease.subscriptionId);
    const credit = subscription?.pool.bytes;
    if (subscription === undefined || credit === undefined) return;
    credit.outBytes -= lease.heldBytes;
    this.#queue(subscription.group);
  }

  /** New work for the group (appends, retries, releases): lent subscriptions may ask for credit again. */
  #onWake(group: GroupRuntime): void {
    for (const member of this.#byGroup.get(group) ?? []) member.quiet = false;
    this.#queue(group);
  }

  #queue(group: GroupRuntime): void {
    if (this.#closed || this.#queued.has(group)) return;
    this.#queued.add(group);
    // One pass per turn, however many wake-ups (appends, credits, retries) arrived in it.
    setImmediate(() => {
      this.#queued.delete(group);
      this.#dispatch(group);
    });
  }

  #dispatch(group: GroupRuntime): void {
    const members = this.#byGroup.get(group);
    if (!members || members.length === 0 || this.#closed) return;
    const batches = new Map<PushSubscription, DeliveredMessage[]>();
    const exhausted = new Set<PushSubscription>();
    let handedOut = 0;
    const offset = this.#rotation.get(group) ?? 0;
    this.#rotation.set(group, offset + 1);
    const workClock = this.#deps.workClock ?? realWorkClock;
    const startedMs = workClock();
    const catchingUp = group.readyQueue.size > PASS_MESSAGES;
    const passMessages = catchingUp ? CATCH_UP_PASS_MESSAGES : PASS_MESSAGES;
    const budgetMs = catchingUp ? CATCH_UP_TURN_BUDGET_MS : TURN_BUDGET_MS;
    let outOfTime = false;
    for (let round = 0; handedOut < passMessages && round < passMessages && !outOfTime; round++) {
      let progressed = false;
      for (let i = 0; i < members.length && !outOfTime; i++) {
        const subscription = members[(offset + i + round) % members.length];
        if (!subscription || subscription.pool.credits <= 0 || exhausted.has(subscription)) continue;
        const byteCredit = subscription.pool.bytes;
        if (byteCredit !== undefined && byteCredit.outBytes >= byteCredit.maxBytes) continue;
        const want = Math.min(subscription.pool.credits, TURN_MESSAGES, passMessages - handedOut);
        const candidates = this.#deps.readySource.take(
          group,
          subscription.subscriptions,
          want,
          // Only a client with nothing out may be sent one message larger than its whole limit.
          byteCredit &&
            new ByteAllowance(byteCredit.maxBytes - byteCredit.outBytes, byteCredit.outBytes === 0),
        );
        if (candidates.length === 0) {
          exhausted.add(subscription);
          continue;
        }
        let batch = batches.get(subscription);
        if (!batch) {
          batch = [];
          batches.set(subscription, batch);
        }
        for (const candidate of candidates) {
          // Counted as the take weighed it: what the lease gives back when it ends.
          const heldBytes = byteCredit && deliveredMessageBytes(candidate.message);
          const delivered = this.#deps.leaseGrant.toPush(
            group,
            candidate,
            subscription.id,
            subscription.consumerId,
            heldBytes,
          );
          if (!delivered) continue;
          if (byteCredit !== undefined && heldBytes !== undefined) byteCredit.outBytes += heldBytes;
          batch.push(delivered);
          subscription.pool.credits--;
          handedOut++;
          progressed = true;
        }
        outOfTime = workClock() - startedMs >= budgetMs;
      }
      if (!progressed) break;
    }
    for (const [subscription, messages] of batches) {
      for (let start = 0; start < messages.length; start += FRAME_MESSAGES) {
        subscription.sink(subscription.id, messages.slice(start, start + FRAME_MESSAGES));
      }
    }
    for (const member of members) {
      // Only peer sessions' subscriptions borrow: a client's own never builds the closure below.
      if (!member.lender) continue;
      settleLoan(member, exhausted.has(member), () =>
        this.#deps.readySource.hasReady(group, member.subscriptions)
          ? {
              ready: this.#deps.readySource.readyHint(group, member.subscriptions, MAX_CREDIT_WANTED),
              // Late work is what was delivered before (the ready queue's again line), not a
              // first delivery queued there (a delay message due, a parked FIFO message, a redrive).
              late: group.readyQueue.againSize > 0,
            }
          : undefined,
      );
    }
    // A full pass, or one out of time, may have left work behind; continue in the next turn.
    if (handedOut >= passMessages || outOfTime) this.#queue(group);
  }
}
