import type { GroupConfigInput, TopicConfig } from '@ricochet/core';
import {
  BrokerError,
  type DeliveredMessage,
  type OutgoingMessage,
  type SendReceipt,
} from '@ricochet/protocol';
import type {
  Awaitable,
  BrokerEngine,
  CreditPool,
  DeadLetterPage,
  FifoHeadView,
  GroupView,
  MessageView,
  NamePage,
  ReceiveRequest,
  SettleFailure,
  SettleItem,
  SubscribeRequest,
  TopicBacklog,
  TopicView,
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

/** The admin calls of a queue owned by another broker (`remote-admin.ts`): a local engine's, answered later. */
export interface QueueAdmin {
  putTopic(name: string, config: TopicConfig): Promise<{ name: string; config: TopicConfig }>;
  describeTopic(name: string): Promise<TopicView | undefined>;
  topicBacklog(topic: string): Promise<TopicBacklog | undefined>;
  listTopics(afterName: string | undefined, limit: number): Promise<NamePage<TopicView>>;
  putGroup(name: string, input: GroupConfigInput): Promise<GroupView>;
  describeGroup(name: string): Promise<GroupView | undefined>;
  pauseGroup(name: string, paused: boolean): Promise<GroupView | undefined>;
  listGroups(afterName: string | undefined, limit: number): Promise<NamePage<GroupView>>;
  describeMessage(messageId: string): Promise<MessageView | undefined>;
  listDeadLetters(group: string, fromOffset: number, limit: number): Promise<DeadLetterPage>;
  redrive(
    group: string,
    options: { messageIds?: readonly string[]; ratePerSecond?: number },
  ): Promise<{ accepted: number }>;
  fifoHeads(groupName: string, limit: number): Promise<FifoHeadView[]>;
  /** Bytes the queue's store holds (`GET /v1/store`). */
  storedBytes(): Promise<number>;
}

/**
 * One queue of a split store as the router reaches it: this broker's engine ({@link LocalQueue}),
 * or a queue another broker owns ({@link ForwardedQueue}). Offsets and receipt handles are the
 * queue's own; the router tags them. The calls are an engine's, answered now or later.
 */
export interface RoutedQueue extends QueueAdmin {
  readonly queue: number;
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
  async putTopic(name: string, config: TopicConfig) {
    return this.engine.putTopic(name, config);
  }
  async describeTopic(name: string) {
    return this.engine.describeTopic(name);
  }
  async topicBacklog(topic: string) {
    return this.engine.topicBacklog(topic);
  }
  async storedBytes() {
    return this.engine.storedBytes();
  }
  async listTopics(afterName: string | undefined, limit: number) {
    return this.engine.listTopics(afterName, limit);
  }
  async putGroup(name: string, input: GroupConfigInput) {
    return this.engine.putGroup(name, input);
  }
  async describeGroup(name: string) {
    return this.engine.describeGroup(name);
  }
  async pauseGroup(name: string, paused: boolean) {
    return this.engine.pauseGroup(name, paused);
  }
  async listGroups(afterName: string | undefined, limit: number) {
    return this.engine.listGroups(afterName, limit);
  }
  async describeMessage(messageId: string) {
    return this.engine.describeMessage(messageId);
  }
  async listDeadLetters(group: string, fromOffset: number, limit: number) {
    return this.engine.listDeadLetters(group, fromOffset, limit);
  }
  async redrive(group: string, options: { messageIds?: readonly string[]; ratePerSecond?: number }) {
    return this.engine.redrive(group, options);
  }
  async fifoHeads(groupName: string, limit: number) {
    return this.engine.fifoHeads(groupName, limit);
  }
}

/**
 * A queue another broker owns: its messaging over a session between brokers ({@link RemoteQueue}),
 * its admin calls over that broker's admin API ({@link QueueAdmin}). The router's subscription ids
 * for it are the owner's.
 */
export class ForwardedQueue implements RoutedQueue {
  readonly queue: number;
  readonly engine = undefined;
  readonly #messaging: RemoteQueue;
  readonly #admin: QueueAdmin;
  readonly #onError: (error: unknown, context: string) => void;

  constructor(messaging: RemoteQueue, admin: QueueAdmin, onError: (error: unknown, context: string) => void) {
    this.queue = messaging.queue;
    this.#messaging = messaging;
    this.#admin = admin;
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
  putTopic(name: string, config: TopicConfig) {
    return this.#admin.putTopic(name, config);
  }
  describeTopic(name: string) {
    return this.#admin.describeTopic(name);
  }
  topicBacklog(topic: string) {
    return this.#admin.topicBacklog(topic);
  }
  storedBytes() {
    return this.#admin.storedBytes();
  }
  listTopics(afterName: string | undefined, limit: number) {
    return this.#admin.listTopics(afterName, limit);
  }
  putGroup(name: string, input: GroupConfigInput) {
    return this.#admin.putGroup(name, input);
  }
  describeGroup(name: string) {
    return this.#admin.describeGroup(name);
  }
  pauseGroup(name: string, paused: boolean) {
    return this.#admin.pauseGroup(name, paused);
  }
  listGroups(afterName: string | undefined, limit: number) {
    return this.#admin.listGroups(afterName, limit);
  }
  describeMessage(messageId: string) {
    return this.#admin.describeMessage(messageId);
  }
  listDeadLetters(group: string, fromOffset: number, limit: number) {
    return this.#admin.listDeadLetters(group, fromOffset, limit);
  }
  redrive(group: string, options: { messageIds?: readonly string[]; ratePerSecond?: number }) {
    return this.#admin.redrive(group, options);
  }
  fifoHeads(groupName: string, limit: number) {
    return this.#admin.fifoHeads(groupName, limit);
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
  async putTopic(): Promise<{ name: string; config: TopicConfig }> {
    throw this.#unavailable();
  }
  async describeTopic() {
    return undefined;
  }
  async topicBacklog() {
    return undefined;
  }
  /** Unknown while nobody owns the queue: counted as nothing. */
  async storedBytes() {
    return 0;
  }
  async listTopics() {
    return { items: [], lastName: null };
  }
  async putGroup(): Promise<GroupView> {
    throw this.#unavailable();
  }
  async describeGroup() {
    return undefined;
  }
  async pauseGroup(): Promise<GroupView | undefined> {
    throw this.#unavailable();
  }
  async listGroups() {
    return { items: [], lastName: null };
  }
  async describeMessage() {
    return undefined;
  }
  async listDeadLetters(): Promise<DeadLetterPage> {
    return { messages: [], cursor: null };
  }
  async redrive(): Promise<{ accepted: number }> {
    throw this.#unavailable();
  }
  async fifoHeads() {
    return [];
  }

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
