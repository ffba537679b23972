import type { GroupConfigInput, TopicConfig } from '@ricochet/core';
import type { DeliveredMessage, OutgoingMessage, SendReceipt } from '@ricochet/protocol';
import type { BrokerMetrics } from './broker-metrics.js';
import type { DeadLetterPage } from './dead-letter/dead-letter-admin.js';
import type { SubscribeRequest } from './dispatch/push-dispatch.js';
import type { ReceiveRequest } from './dispatch/simple-consumption.js';
import type { SettleFailure, SettleItem } from './lifecycle/settle-item.js';
import type { RetentionPassReport } from './log/retention.js';
import type { NamePage } from './model/name-order.js';
import type { FifoHeadView } from './views/fifo-view.js';
import type { TopicBacklog } from './views/group-backlog.js';
import type { GroupView } from './views/group-view.js';
import type { MessageView } from './views/message-view.js';
import type { TopicView } from './views/topic-view.js';

/** A value now, or later: what a service backed by other processes may need to answer with. */
export type Awaitable<T> = T | Promise<T>;

/**
 * A client's push subscription, as the front doors ask a service for it. `scope: 'owned'`
 * (`subscribe.scope`, granted with the `ownedSubscriptions` feature) limits it to the queues the
 * broker owns, following them as they move (`cluster/routing/queue-subscriptions.ts`); an engine
 * over one store owns its only queue, and serves every subscription alike.
 */
export type ServiceSubscribeRequest = SubscribeRequest & {
  readonly group: string;
  readonly clientId?: string | undefined;
  readonly scope?: 'owned' | undefined;
};

/**
 * A simple consumer's receive, as the front doors ask a service for it. `scope: 'owned'`
 * (`receive.scope`, granted with the `ownedReceives` feature) limits it to the queues the broker
 * owns now (`cluster/routing/partition-router.ts`); an engine over one store owns its only queue,
 * and serves every receive alike.
 */
export type ServiceReceiveRequest = ReceiveRequest & { readonly scope?: 'owned' | undefined };

/**
 * What the client front doors call (a session on WebSocket, TCP or HTTP, the RocketMQ gRPC
 * port): messages in and out, the leases on them and the push subscriptions that carry them.
 * Every call here is on a client's behalf and is what a forwarding broker carries to a queue's
 * owner; see "The service seam" in docs/architecture.md.
 */
export interface MessagingService {
  readonly metrics: BrokerMetrics;
  send(messages: readonly OutgoingMessage[]): Promise<SendReceipt[]>;
  register(group: string, subscriptions: Readonly<Record<string, string>>): Awaitable<void>;
  receive(request: ServiceReceiveRequest): Promise<DeliveredMessage[]>;
  ack(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]>;
  changeInvisibleDuration(
    receiptHandle: string,
    invisibleDurationMs: number,
  ): Promise<{ readonly messageId: string; readonly receiptHandle: string }>;
  subscribe(request: ServiceSubscribeRequest): Awaitable<number>;
  unsubscribe(subscriptionId: number): Awaitable<boolean>;
  credit(subscriptionId: number, credits: number): void;
  nack(items: readonly SettleItem[], settledBy?: string): Promise<SettleFailure[]>;
  release(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]>;
  endSubscriptions(subscriptionIds: readonly number[]): void;
}

/**
 * What operators call (the admin API, so the CLI and the dashboard): topics and groups, the views
 * of messages, the DLQ and its redrive, retention and the store's size.
 */
export interface AdminService {
  readonly metrics: BrokerMetrics;
  putTopic(name: string, config: TopicConfig): Promise<{ name: string; config: TopicConfig }>;
  describeTopic(name: string): Awaitable<TopicView | undefined>;
  /** R4 for a topic: its limit and the backlog of each group reading it; `undefined` for an unknown topic. */
  topicBacklog(topic: string): Awaitable<TopicBacklog | undefined>;
  listTopics(afterName: string | undefined, limit: number): Awaitable<NamePage<TopicView>>;
  putGroup(name: string, input: GroupConfigInput): Promise<GroupView>;
  describeGroup(name: string): Awaitable<GroupView | undefined>;
  /** Pause a group by hand (`true`) or resume it (DESIGN.md §11); `undefined` when it does not exist. */
  pauseGroup(name: string, paused: boolean): Promise<GroupView | undefined>;
  listGroups(afterName: string | undefined, limit: number): Awaitable<NamePage<GroupView>>;
  describeMessage(messageId: string): Promise<MessageView | undefined>;
  listDeadLetters(group: string, fromOffset: number, limit: number): Awaitable<DeadLetterPage>;
  redrive(
    group: string,
    options: { messageIds?: readonly string[]; ratePerSecond?: number },
  ): Awaitable<{ accepted: number }>;
  fifoHeads(groupName: string, limit: number): Awaitable<FifoHeadView[]>;
  runRetentionPass(): Promise<RetentionPassReport>;
  /** Bytes the store's data takes up, as `--max-store-bytes` compares (with queues spread, every queue's). */
  storedBytes(): Awaitable<number>;
  checkWatermarks(): Promise<void>;
}

/**
 * The broker as a whole: {@link BrokerEngine} over one store, or `PartitionRouter` over the
 * engines of a store split into queues. Its two faces are the {@link MessagingService} clients'
 * front doors call and the {@link AdminService} the admin routes call; each caller asks for the
 * face it uses. Callers await every answer that is {@link Awaitable}, so a service may answer
 * later than the engine does.
 */
export interface BrokerService extends MessagingService, AdminService {
  /**
   * The service of one queue of the store, as a session between brokers reaches it
   * (`gateway/peer-access.ts`): its requests, receipt handles and offsets are that queue's own.
   * `undefined` for a queue the store does not have.
   */
  queueService(queue: number): BrokerService | undefined;
  start(): void;
  drain(): void;
  close(): Promise<void>;
}
