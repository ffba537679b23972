import {
  type AdminCallName,
  BrokerError,
  type DeliveredMessage,
  type OutgoingMessage,
  type SendReceipt,
} from '@ricochet/protocol';
import {
  type AdminCallAnswer,
  type AdminCallArgs,
  type Awaitable,
  answerBetweenOwners,
  type BrokerEngine,
  type CreditPool,
  type QueueAdminCall,
  type ReceiveRequest,
  type SettleFailure,
  type SettleItem,
  type SubscribeRequest,
} from '../../engine/index.js';
import type { RemoteQueue } from '../peers/remote-queue.js';
import type { CreditLending } from './credit-lending.js';

/** A push subscription in one queue, as the router makes it for a client subscription over every queue. */
export type QueueSubscribeRequest = SubscribeRequest & {
  readonly group: string;
  readonly clientId?: string | undefined;
  /** The client's credit over every queue: a local queue spends it, a remote one borrows from it. */
  readonly creditPool: CreditPool;
  readonly lending: CreditLending;
};

/**
 * One queue of a split store as the router reaches it: this broker's engine ({@link LocalQueue}),
 * or a queue another broker owns ({@link ForwardedQueue}). Offsets and receipt handles are the
 * queue's own; the router tags them. The calls are an engine's, answered now or later.
 */
export interface RoutedQueue {
  readonly queue: number;
  /**
   * An admin call of this queue (`QUEUE_ADMIN_CALLS`): answered by the engine here, by the owner
   * elsewhere, or as a queue between owners answers it.
   */
  readonly admin: QueueAdminCall;
  /** This broker's engine of the queue, or `undefined` when another broker owns it. */
  readonly engine: BrokerEngine | undefined;
  send(messages: readonly OutgoingMessage[]): Promise<SendReceipt[]>;
  register(group: string, subscriptions: Readonly<Record<string, string>>): Awaitable<void>;
  /** Lease within `request.budget` (see `RemoteQueue.receive` for when a remote queue spends it). */
  receive(request: ReceiveRequest): Promise<DeliveredMessage[]>;
  ack(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]>;
  nack(items: readonly SettleItem[], settledBy?: string): Promise<SettleFailure[]>;
  release(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]>;
  changeInvisibleDuration(
    receiptHandle: string,
    invisibleDurationMs: number,
  ): Promise<{ readonly messageId: string; readonly receiptHandle: string }>;
  subscribe(request: QueueSubscribeRequest): Awaitable<number>;
  unsubscribe(subscriptionId: number): Awaitable<void>;
  /** The client subscription's credit pool grew: a local queue looks for messages to spend it on. */
  look(subscriptionId: number): void;
  /** Lend a remote queue's subscription credit (`CreditLending`); a local queue spends the pool instead. */
  lend(subscriptionId: number, credits: number): void;
  /** Sessions ended: their subscriptions end, and what they held is released (C2). */
  end(subscriptionIds: readonly number[]): Awaitable<void>;
  /** Whether the group has messages Ready again here (late work, P3); a remote queue says so itself, in `creditWanted`. */
  hasReadyAgain(group: string): boolean;
  /** No longer routed to: a local queue's engine closes (its store gives its lease back), a remote queue's session ends. */
  close(): Promise<void>;
}

/**
 * A queue this broker owns: its engine, in this process. The calls that answer later are `async`
 * here so that an engine that refuses at once (closed while the queue changed hands) rejects, as
 * a remote queue does, rather than throws into the router.
 */
export class LocalQueue implements RoutedQueue {
  readonly queue: number;
  readonly engine: BrokerEngine;

  constructor(queue: number, engine: BrokerEngine) {
    this.queue = queue;
    this.engine = engine;
  }

  async send(messages: readonly OutgoingMessage[]) {
    return this.engine.send(messages);
  }
  async register(group: string, subscriptions: Readonly<Record<string, string>>) {
    this.engine.register(group, subscriptions);
  }
  async receive(request: ReceiveRequest) {
    return this.engine.receive(request);
  }
  async ack(receiptHandles: readonly string[], settledBy?: string) {
    return this.engine.ack(receiptHandles, settledBy);
  }
  async nack(items: readonly SettleItem[], settledBy?: string) {
    return this.engine.nack(items, settledBy);
  }
  async release(receiptHandles: readonly string[], settledBy?: string) {
    return this.engine.release(receiptHandles, settledBy);
  }
  async changeInvisibleDuration(receiptHandle: string, invisibleDurationMs: number) {
    return this.engine.changeInvisibleDuration(receiptHandle, invisibleDurationMs);
  }
  subscribe({ lending: _, ...request }: QueueSubscribeRequest) {
    return this.engine.subscribe(request);
  }
  unsubscribe(subscriptionId: number) {
    this.engine.unsubscribe(subscriptionId);
  }
  look(subscriptionId: number) {
    this.engine.credit(subscriptionId, 0);
  }
  lend() {}
  end(subscriptionIds: readonly number[]) {
    this.engine.endSubscriptions(subscriptionIds);
  }
  hasReadyAgain(group: string) {
    return this.engine.hasReadyAgain(group);
  }
  async close() {
    this.engine.drain();
    await this.engine.close();
  }
  readonly admin: QueueAdminCall = async <K extends AdminCallName>(call: K, ...args: AdminCallArgs<K>) => {
    const method = this.engine[call] as (
      ...given: AdminCallArgs<K>
    ) => AdminCallAnswer<K> | Promise<AdminCallAnswer<K>>;
    return method.apply(this.engine, args);
  };
}

/**
 * A queue another broker owns: its messaging over a session between brokers ({@link RemoteQueue}),
 * its admin calls on the same session (`peer-admin.ts`), or over the owner's admin API when the
 * owner predates them. The router's subscription ids for it are the owner's.
 */
export class ForwardedQueue implements RoutedQueue {
  readonly queue: number;
  readonly engine = undefined;
  readonly admin: QueueAdminCall;
  readonly #messaging: RemoteQueue;
  readonly #onError: (error: unknown, context: string) => void;

  constructor(
    messaging: RemoteQueue,
    admin: QueueAdminCall,
    onError: (error: unknown, context: string) => void,
  ) {
    this.queue = messaging.queue;
    this.#messaging = messaging;
    this.admin = admin;
    this.#onError = onError;
  }

  send(messages: readonly OutgoingMessage[]) {
    return this.#messaging.send(messages);
  }
  register(group: string, subscriptions: Readonly<Record<string, string>>) {
    return this.#messaging.register(group, subscriptions);
  }
  receive(request: ReceiveRequest) {
    return this.#messaging.receive(request);
  }
  ack(receiptHandles: readonly string[], settledBy?: string) {
    return this.#messaging.ack(receiptHandles, settledBy);
  }
  nack(items: readonly SettleItem[], settledBy?: string) {
    return this.#messaging.nack(items, settledBy);
  }
  release(receiptHandles: readonly string[], settledBy?: string) {
    return this.#messaging.release(receiptHandles, settledBy);
  }
  changeInvisibleDuration(receiptHandle: string, invisibleDurationMs: number) {
    return this.#messaging.changeInvisibleDuration(receiptHandle, invisibleDurationMs);
  }
  subscribe({ creditPool: _, ...request }: QueueSubscribeRequest) {
    return this.#messaging.subscribe(request);
  }
  unsubscribe(subscriptionId: number) {
    return this.#messaging.unsubscribe(subscriptionId);
  }
  /** A remote queue is lent credit when it asks for it (`CreditLending`); there is nothing to look at. */
  look() {}
  lend(subscriptionId: number, credits: number) {
    this.#messaging.credit(subscriptionId, credits);
  }
  async end(subscriptionIds: readonly number[]) {
    const ended = await Promise.allSettled(subscriptionIds.map((id) => this.#messaging.end(id)));
    // A session to the owner that is gone ended them already: the owner released what they held.
    for (const outcome of ended) {
      if (outcome.status === 'rejected' && this.#messaging.open)
        this.#onError(outcome.reason, `could not end a subscription in queue ${this.queue}`);
    }
  }
  hasReadyAgain() {
    return false;
  }
  close() {
    return this.#messaging.close();
  }
}

/**
 * A queue between owners (its owner went away, and no broker took it over yet, or this broker
 * has not found out who did): requests for it are answered `503 BROKER_UNAVAILABLE`, which
 * clients retry; a receive finds nothing in it; subscriptions are made once it has an owner again.
 */
export class PendingQueue implements RoutedQueue {
  readonly queue: number;
  readonly engine = undefined;

  constructor(queue: number) {
    this.queue = queue;
  }

  /** A read finds the queue empty; a write is refused with `503` (`QUEUE_ADMIN_CALLS`). */
  readonly admin: QueueAdminCall = (call, ..._args) => {
    try {
      return Promise.resolve(answerBetweenOwners(this.queue, call));
    } catch (error) {
      return Promise.reject(error);
    }
  };

  async send(): Promise<SendReceipt[]> {
    throw this.#unavailable();
  }
  register() {
    throw this.#unavailable();
  }
  async receive() {
    return [];
  }
  async ack(receiptHandles: readonly string[]) {
    return this.#refuseAll(receiptHandles.length);
  }
  async nack(items: readonly SettleItem[]) {
    return this.#refuseAll(items.length);
  }
  async release(receiptHandles: readonly string[]) {
    return this.#refuseAll(receiptHandles.length);
  }
  async changeInvisibleDuration(): Promise<{ readonly messageId: string; readonly receiptHandle: string }> {
    throw this.#unavailable();
  }
  /** Nothing to subscribe in yet: the router subscribes when the queue has an owner. */
  subscribe() {
    return -1;
  }
  unsubscribe() {}
  look() {}
  lend() {}
  end() {}
  hasReadyAgain() {
    return false;
  }
  async close() {}
  #unavailable(): BrokerError {
    return BrokerError.of('BROKER_UNAVAILABLE', `queue ${this.queue} is between owners; try again`, {
      queue: this.queue,
    });
  }

  #refuseAll(count: number): SettleFailure[] {
    const error = this.#unavailable();
    return Array.from({ length: count }, (_, index) => ({ index, error }));
  }
}
