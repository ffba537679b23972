import type { DeliveredMessage } from '@ricochet/protocol';
import { BrokerError, deliveredMessageBytes } from '@ricochet/protocol';
import type { LeaseGrant } from '../lifecycle/lease-grant.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import type { TimerService } from '../timers/timer-service.js';
import { ByteAllowance } from './byte-allowance.js';
import type { ReadySource, Subscriptions } from './ready-source.js';
import { parseSubscriptions } from './subscriptions.js';

export interface ReceiveRequest {
  readonly group: string;
  readonly subscriptions: Readonly<Record<string, string>>;
  readonly maxMessages: number;
  /**
   * The most bytes of messages the answer may carry (`deliveredMessageBytes`), one message always
   * excepted: what keeps the answer, one frame, below the frame limit of the client's session.
   * @default no limit
   */
  readonly maxBytes?: number;
  readonly invisibleDurationMs: number;
  /** How long an empty receive waits for a message (long polling); 0 answers at once. */
  readonly awaitDurationMs: number;
  readonly consumerId: string;
  /** Aborts a waiting receive (the session closed); it then answers with no messages. */
  readonly signal?: AbortSignal;
  /**
   * What the client's receive may still lease in all, when it waits on several queues of a
   * partitioned store at once (one engine each): every lease spends from it, so together they
   * never lease more than the client asked for. @default `maxMessages` for this receive alone
   */
  readonly budget?: ReceiveBudget;
}

/** Messages a receive spread over several queues may still lease (see `ReceiveRequest.budget`). */
export interface ReceiveBudget {
  remaining: number;
  /** Bytes of messages (`deliveredMessageBytes`) the answer may still carry: `maxBytes` less what was leased. */
  remainingBytes: number;
}

/** A receive waiting for messages. */
interface Waiter {
  /** Try to lease; answers the receive when something was leased. */
  serve(): void;
  /** Answer the receive with no messages. */
  cancel(): void;
}

export interface SimpleConsumptionDeps {
  readonly groups: GroupRegistry;
  readonly readySource: ReadySource;
  readonly leaseGrant: LeaseGrant;
  readonly timers: TimerService;
}

/**
 * Simple consumers (S1–S5): receive with leases and long polling. Their acks, dead-letters and
 * changes of invisibility go through the one settle path (Settlement), like push consumers'.
 */
export class SimpleConsumption {
  readonly #deps: SimpleConsumptionDeps;
  /** Waiting receives per group, served oldest first when the group wakes. */
  readonly #waiters = new Map<GroupRuntime, Set<Waiter>>();
  readonly #unsubscribeWake = new Map<GroupRuntime, () => void>();

  constructor(deps: SimpleConsumptionDeps) {
    this.#deps = deps;
  }

  /**
   * Register a simple consumer's subscriptions before its first receive: the group and topics are
   * created if allowed, and the group's position in each topic is taken now (`startFrom`).
   */
  register(group: string, subscriptions: Readonly<Record<string, string>>): void {
    this.#prepare(group, subscriptions);
  }

  /** Lease up to `maxMessages` Ready messages; wait up to `awaitDurationMs` for the first one. */
  async receive(request: ReceiveRequest): Promise<DeliveredMessage[]> {
    const { group, subscriptions } = this.#prepare(request.group, request.subscriptions);
    const immediate = this.#lease(group, subscriptions, request);
    if (immediate.length > 0 || request.awaitDurationMs === 0 || request.signal?.aborted) return immediate;
    return this.#longPoll(group, subscriptions, request);
  }

  /** The group and parsed subscriptions of a simple consumer, with a cursor on every topic. */
  #prepare(
    groupName: string,
    requested: Readonly<Record<string, string>>,
  ): { group: GroupRuntime; subscriptions: Subscriptions } {
    const group = this.#deps.groups.require(groupName);
    if (group.config.consumeMode === 'broadcasting') {
      throw BrokerError.of(
        'BAD_REQUEST',
        `group "${group.name}" is broadcasting; simple consumers consume clustering groups only`,
        { group: group.name },
      );
    }
    const subscriptions = parseSubscriptions(requested);
    for (const topic of subscriptions.keys()) this.#deps.readySource.ensureCursor(group, topic);
    return { group, subscriptions };
  }

  #lease(group: GroupRuntime, subscriptions: Subscriptions, request: ReceiveRequest): DeliveredMessage[] {
    const delivered: DeliveredMessage[] = [];
    const budget = request.budget;
    const want = budget === undefined ? request.maxMessages : Math.min(request.maxMessages, budget.remaining);
    const maxBytes = Math.min(
      request.maxBytes ?? Number.POSITIVE_INFINITY,
      budget?.remainingBytes ?? Number.POSITIVE_INFINITY,
    );
    if (want <= 0 || maxBytes <= 0) return delivered;
    // Over several queues, only the receive's first lease may go past the bytes (one message alone).
    const leasedBefore = budget !== undefined && budget.remaining < request.maxMessages;
    const bytes = Number.isFinite(maxBytes) ? new ByteAllowance(maxBytes, !leasedBefore) : undefined;
    const candidates = this.#deps.readySource.take(group, subscriptions, want, bytes);
    for (const candidate of candidates) {
      const message = this.#deps.leaseGrant.toSimple(
        group,
        candidate,
        request.invisibleDurationMs,
        request.consumerId,
      );
      if (message) delivered.push(message);
    }
    if (budget !== undefined) {
      budget.remaining -= delivered.length;
      for (const message of delivered) budget.remainingBytes -= deliveredMessageBytes(message);
    }
    return delivered;
  }

  #longPoll(
    group: GroupRuntime,
    subscriptions: Subscriptions,
    request: ReceiveRequest,
  ): Promise<DeliveredMessage[]> {
    return new Promise((resolve) => {
      let finished = false;
      const waiters = this.#waitersOf(group);
      const finish = (messages: DeliveredMessage[]) => {
        if (finished) return;
        finished = true;
        waiters.delete(waiter);
        timer.cancel();
        request.signal?.removeEventListener('abort', onAbort);
        resolve(messages);
      };
      const waiter: Waiter = {
        serve: () => {
          const messages = this.#lease(group, subscriptions, request);
          if (messages.length > 0) finish(messages);
        },
        cancel: () => finish([]),
      };
      const onAbort = () => finish([]);
      // One last look at the deadline, then answer empty.
      const timer = this.#deps.timers.setTimer(request.awaitDurationMs, () =>
        finish(this.#lease(group, subscriptions, request)),
      );
      request.signal?.addEventListener('abort', onAbort, { once: true });
      waiters.add(waiter);
    });
  }

  #waitersOf(group: GroupRuntime): Set<Waiter> {
    let waiters = this.#waiters.get(group);
    if (!waiters) {
      const created = new Set<Waiter>();
      waiters = created;
      this.#waiters.set(group, created);
      this.#unsubscribeWake.set(
        group,
        group.onWake(() => {
          for (const waiter of [...created]) waiter.serve();
        }),
      );
    }
    return waiters;
  }

  /** Answer every waiting receive with what it has (nothing): the broker is closing. */
  close(): void {
    for (const [group, waiters] of this.#waiters) {
      for (const waiter of [...waiters]) waiter.cancel();
      this.#unsubscribeWake.get(group)?.();
    }
    this.#waiters.clear();
    this.#unsubscribeWake.clear();
  }
}
