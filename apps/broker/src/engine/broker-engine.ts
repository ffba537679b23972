import {
  type Clock,
  type GroupConfigInput,
  type Random,
  systemClock,
  systemRandom,
  type TopicConfig,
} from '@ricochet/core';
import {
  BrokerError,
  type DeliveredMessage,
  type OutgoingMessage,
  type SendReceipt,
} from '@ricochet/protocol';
import type { BrokerConfig } from '../config.js';
import type { BrokerStore } from '../store/broker-store.js';
import { AppendWaker } from './append-waker.js';
import { BroadcastDispatch } from './broadcast-dispatch.js';
import { BrokerMetrics } from './broker-metrics.js';
import { DeadLetterAdmin, type DeadLetterPage } from './dead-letter-admin.js';
import { DeliveryRecords } from './delivery-records.js';
import { DueEvents } from './due-events.js';
import { EffectApplier } from './effect-applier.js';
import { describeFifoHeads, type FifoHeadView } from './fifo-view.js';
import { GroupBacklog } from './group-backlog.js';
import { GroupRegistry, type GroupRuntime } from './group-registry.js';
import { describeGroup, type GroupView } from './group-view.js';
import { LeaseGrant } from './lease-grant.js';
import { describeMessage, type MessageView } from './message-view.js';
import { type NamePage, pageByName } from './name-page.js';
import { PushDispatch, type SubscribeRequest } from './push-dispatch.js';
import { PushLeaseTable } from './push-lease-table.js';
import { ReadySource } from './ready-source.js';
import { recoverDeliveries } from './recovery.js';
import { Retention, type RetentionPassReport } from './retention.js';
import { Scheduler } from './scheduler.js';
import { SendPath } from './send-path.js';
import type { SettleFailure, SettleItem, SettleVerb } from './settle-item.js';
import { settleSplit } from './settle-split.js';
import { Settlement } from './settlement.js';
import { type ReceiveRequest, SimpleConsumption } from './simple-consumption.js';
import { type StoreWatermarks, watermarksFor } from './store-watermarks.js';
import { systemTimers, type TimerService } from './timer-service.js';
import { TopicRegistry } from './topic-registry.js';
import { describeTopic, type TopicView } from './topic-view.js';

export interface BrokerEngineOptions {
  readonly store: BrokerStore;
  readonly config: BrokerConfig;
  /** @default systemClock */
  readonly clock?: Clock;
  /** @default Node's timers */
  readonly timers?: TimerService;
  /** Jitter for exponential retry policies. @default Math.random */
  readonly random?: Random;
  /** Where failures of background work are reported. @default console.error */
  readonly onError?: (error: unknown, context: string) => void;
  /** Where notable changes are reported (sends refused or accepted again). @default console.warn */
  readonly onNotice?: (message: string) => void;
  /** Free bytes for `minFreeDiskBytes` (`buildBroker`: a `statfs`). @default unknown: no disk check */
  readonly freeDiskBytes?: () => Promise<number | undefined>;
}

/**
 * The broker's engine: topics, groups, the send path, consumption, the scheduler and the DLQ,
 * over a durable store. Transport-agnostic: the WebSocket gateway and the admin routes call it.
 */
export class BrokerEngine {
  readonly metrics: BrokerMetrics;
  readonly #store: BrokerStore;
  readonly #clock: Clock;
  readonly #onError: (error: unknown, context: string) => void;
  readonly #topics: TopicRegistry;
  readonly #groups: GroupRegistry;
  readonly #readySource: ReadySource;
  readonly #applier: EffectApplier;
  readonly #settlement: Settlement;
  readonly #dueEvents: DueEvents;
  readonly #records: DeliveryRecords;
  readonly #scheduler: Scheduler;
  readonly #sendPath: SendPath;
  readonly #simple: SimpleConsumption;
  readonly #pushLeases: PushLeaseTable;
  readonly #push: PushDispatch;
  readonly #broadcast: BroadcastDispatch;
  readonly #backlog: GroupBacklog;
  readonly #deadLetters: DeadLetterAdmin;
  readonly #retention: Retention;
  readonly #watermarks: StoreWatermarks;
  #closed = false;

  constructor(options: BrokerEngineOptions) {
    const { store, config } = options;
    this.#store = store;
    this.#clock = options.clock ?? systemClock;
    const timers = options.timers ?? systemTimers;
    const random = options.random ?? systemRandom;
    this.#onError =
      options.onError ?? ((error, context) => console.error(`ricochet engine: ${context}`, error));
    this.#topics = new TopicRegistry(store, this.#clock, config.autoCreateTopics);
    this.#groups = new GroupRegistry(store, this.#clock, config.autoCreateGroups);
    this.#backlog = new GroupBacklog({
      topics: this.#topics,
      groups: this.#groups,
      broadcastInstances: (group) => this.#broadcast.instancesOf(group),
    });
    this.metrics = new BrokerMetrics({ groupGauges: () => this.#backlog.gauges() });
    this.#watermarks = watermarksFor(config, {
      metrics: this.metrics,
      storedBytes: () => store.storedBytes(),
      freeDiskBytes: options.freeDiskBytes ?? (async () => undefined),
      onNotice: options.onNotice ?? ((message) => console.warn(`ricochet engine: ${message}`)),
      onError: (error) => this.#onError(error, 'watermark check failed'),
    });
    this.#records = new DeliveryRecords(store, this.#groups, timers);
    const appendWaker = new AppendWaker(this.#groups, (group, topic) => this.#backlog.reads(group, topic));
    // Timers first: the applier writes them; they report what falls due once started (see start()).
    this.#scheduler = new Scheduler({
      store,
      clock: this.#clock,
      timers,
      onError: (error) => this.#onError(error, 'scheduler pass failed'),
    });
    this.#pushLeases = new PushLeaseTable(this.#clock, timers);
    this.#applier = new EffectApplier({
      store,
      records: this.#records,
      clock: this.#clock,
      topics: this.#topics,
      groups: this.#groups,
      metrics: this.metrics,
      scheduler: this.#scheduler,
      pushLeases: this.#pushLeases,
      appendWaker,
    });
    const decided = { clock: this.#clock, random, groups: this.#groups, records: this.#records };
    this.#settlement = new Settlement({ ...decided, applier: this.#applier });
    this.#dueEvents = new DueEvents({
      ...decided,
      applier: this.#applier,
      maxReadyQueuePerGroup: config.maxReadyQueuePerGroup,
    });
    this.#pushLeases.start((lease) => this.#dueEvents.onPushLeaseExpired(lease));
    const leaseGrant = new LeaseGrant({ clock: this.#clock, random, applier: this.#applier });
    this.#readySource = new ReadySource({
      records: this.#records,
      topics: this.#topics,
      groups: this.#groups,
      clock: this.#clock,
      applier: this.#applier,
      scheduler: this.#scheduler,
      maxReadyQueuePerGroup: config.maxReadyQueuePerGroup,
    });
    this.#sendPath = new SendPath({
      store,
      clock: this.#clock,
      topics: this.#topics,
      metrics: this.metrics,
      maxBodyBytes: config.maxBodyBytes,
      dedupWindowMs: config.dedupWindowMs,
      maxDelayMs: config.maxDelayMs,
      onAppended: (topic) => appendWaker.appended(topic),
      throttle: (topic) => this.#watermarks.refusal() ?? this.#backlog.throttle(topic),
    });
    this.#simple = new SimpleConsumption({
      groups: this.#groups,
      readySource: this.#readySource,
      leaseGrant,
      timers,
    });
    let lastSubscriptionId = 0;
    const nextSubscriptionId = () => ++lastSubscriptionId;
    this.#push = new PushDispatch({
      groups: this.#groups,
      readySource: this.#readySource,
      leaseGrant,
      settlement: this.#settlement,
      pushLeases: this.#pushLeases,
      nextSubscriptionId,
    });
    this.#broadcast = new BroadcastDispatch({
      store,
      clock: this.#clock,
      timers,
      topics: this.#topics,
      groups: this.#groups,
      metrics: this.metrics,
      applier: this.#applier,
      nextSubscriptionId,
    });
    this.#retention = new Retention({
      store,
      clock: this.#clock,
      timers,
      topics: this.#topics,
      groups: this.#groups,
      records: this.#records,
      metrics: this.metrics,
      broadcast: this.#broadcast.retention,
      sendPending: (messageId) => this.#sendPath.isPending(messageId),
      dedupWindowMs: config.dedupWindowMs,
      intervalMs: config.retentionCheckIntervalMs,
      onError: (error) => this.#onError(error, 'retention pass failed'),
    });
    this.#deadLetters = new DeadLetterAdmin({
      topics: this.#topics,
      groups: this.#groups,
      applier: this.#applier,
      timers,
    });
  }

  /** Load the stored state, recover in-flight deliveries, and start the scheduler. */
  start(): void {
    this.#topics.load();
    this.#groups.load();
    recoverDeliveries({
      clock: this.#clock,
      store: this.#store,
      groups: this.#groups,
      applier: this.#applier,
      settlement: this.#settlement,
      dueEvents: this.#dueEvents,
    });
    this.#broadcast.load();
    this.#scheduler.start((group, due) => this.#dueEvents.onDue(group, due));
    this.#retention.start();
    void this.#watermarks.start().catch((error: unknown) => this.#onError(error, 'watermark check failed'));
  }

  /** Run a retention pass now (after one in progress); they also run every `retentionCheckIntervalMs`. */
  runRetentionPass(): Promise<RetentionPassReport> {
    this.#assertOpen();
    return this.#retention.runPass();
  }

  /** Read free disk space and the store's size now, and refuse or accept sends accordingly. */
  checkWatermarks(): Promise<void> {
    return this.#watermarks.check();
  }

  // ─── Messaging ────────────────────────────────────────────────────────────────────────────

  send(messages: readonly OutgoingMessage[]): Promise<SendReceipt[]> {
    this.#assertOpen();
    return this.#sendPath.send(messages);
  }

  /** Register a simple consumer's subscriptions: the group's position is taken now. */
  register(group: string, subscriptions: Readonly<Record<string, string>>): void {
    this.#assertOpen();
    this.#simple.register(group, subscriptions);
  }

  receive(request: ReceiveRequest): Promise<DeliveredMessage[]> {
    this.#assertOpen();
    return this.#simple.receive(request);
  }

  /**
   * Commit deliveries (S3), of any group; answer after the commit is durable. `settledBy` names
   * the principal for the delivery history.
   */
  async ack(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]> {
    return this.#settleDurably(
      receiptHandles.map((receiptHandle) => ({ receiptHandle })),
      'ack',
      settledBy,
    );
  }

  /** Move a live simple lease's deadline (S4); answers, with the new receipt handle, once durable. */
  async changeInvisibleDuration(
    receiptHandle: string,
    invisibleDurationMs: number,
  ): Promise<{ readonly messageId: string; readonly receiptHandle: string }> {
    this.#assertOpen();
    const changed = this.#settlement.changeInvisibility(receiptHandle, invisibleDurationMs);
    this.#applier.flushTurn();
    await this.#store.durable();
    return changed;
  }

  /** Start a push subscription (P1; B1 for a broadcasting group); returns its id. */
  subscribe(
    request: SubscribeRequest & { readonly group: string; readonly clientId?: string | undefined },
  ): number {
    this.#assertOpen();
    const group = this.#groups.require(request.group);
    if (group.config.consumeMode === 'broadcasting') return this.#broadcast.subscribe(group, request);
    return this.#push.subscribe(group, request);
  }

  unsubscribe(subscriptionId: number): boolean {
    return this.#push.unsubscribe(subscriptionId) || this.#broadcast.unsubscribe(subscriptionId);
  }

  credit(subscriptionId: number, credits: number): void {
    if (!this.#broadcast.credit(subscriptionId, credits)) this.#push.credit(subscriptionId, credits);
  }

  /**
   * Report failed push deliveries (P2–P4; B1: recorded, not retried), or dead-letter deliveries
   * now (D3, push or simple); answer after the commit is durable.
   */
  async nack(items: readonly SettleItem[], settledBy?: string): Promise<SettleFailure[]> {
    return this.#settleDurably(items, 'nack', settledBy);
  }

  /** Hand push deliveries back unprocessed (C2). */
  async release(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]> {
    return this.#settleDurably(
      receiptHandles.map((receiptHandle) => ({ receiptHandle })),
      'release',
      settledBy,
    );
  }

  /** A session ended: its push subscriptions stop and their deliveries are released (C2). */
  endSubscriptions(subscriptionIds: readonly number[]): void {
    if (this.#closed) return;
    this.#push.endSubscriptions(subscriptionIds);
    this.#broadcast.endSubscriptions(subscriptionIds);
  }

  /** Settle a batch — broadcast deliveries and clustering ones alike — and answer once durable. */
  async #settleDurably(
    items: readonly SettleItem[],
    verb: SettleVerb,
    settledBy: string | undefined,
  ): Promise<SettleFailure[]> {
    this.#assertOpen();
    const failures = settleSplit(
      items,
      (broadcast) => this.#broadcast.settle(broadcast, verb, settledBy),
      (clustering) => this.#settlement.settle(clustering, verb, settledBy),
    );
    this.#applier.flushTurn();
    await this.#store.durable();
    return failures;
  }

  // ─── Admin ────────────────────────────────────────────────────────────────────────────────

  putTopic(name: string, config: TopicConfig): { name: string; config: TopicConfig } {
    const topic = this.#topics.put(name, config);
    return { name: topic.name, config: topic.record.config };
  }

  /** A topic as `GET /v1/topics/:topic` shows it, or `undefined` when it does not exist. */
  describeTopic(name: string): TopicView | undefined {
    const topic = this.#topics.get(name);
    return topic && describeTopic(topic, this.#groups);
  }

  /** Up to `limit` topics (DLQ topics too) named after `afterName`, by name, from memory. */
  listTopics(afterName: string | undefined, limit: number): NamePage<TopicView> {
    const page = pageByName(this.#topics.list(), afterName, limit);
    return { items: page.items.map((topic) => describeTopic(topic, this.#groups)), lastName: page.lastName };
  }

  putGroup(name: string, input: GroupConfigInput): GroupView {
    return this.#describe(this.#groups.put(name, input));
  }

  /** A group as `GET /v1/groups/:group` shows it, or `undefined` when it does not exist. */
  describeGroup(name: string): GroupView | undefined {
    const group = this.#groups.get(name);
    return group && this.#describe(group);
  }

  /** Up to `limit` groups named after `afterName`, by name, from memory. */
  listGroups(afterName: string | undefined, limit: number): NamePage<GroupView> {
    const page = pageByName(this.#groups.list(), afterName, limit);
    return { items: page.items.map((group) => this.#describe(group)), lastName: page.lastName };
  }

  /**
   * A message by id and where it stands in every group that consumes its topic. Read once every
   * write queued before the call has committed: the history a consumer's last ack or the DLQ copy
   * it was just delivered wrote is in the answer.
   */
  async describeMessage(messageId: string): Promise<MessageView | undefined> {
    await this.#store.committed();
    return describeMessage(messageId, {
      store: this.#store,
      topics: this.#topics,
      groups: this.#groups,
      records: this.#records,
      clock: this.#clock,
      broadcastInstances: (group) => this.#broadcast.instancesOf(group),
    });
  }

  /** Start shutting down: waiting receives answer now (with nothing), so requests can finish. */
  drain(): void {
    this.#simple.close();
    this.#push.close();
    this.#broadcast.close();
  }

  /** D2: a page of the group's DLQ. @throws BrokerError NOT_FOUND for an unknown group. */
  listDeadLetters(group: string, fromOffset: number, limit: number): DeadLetterPage {
    return this.#deadLetters.list(group, fromOffset, limit);
  }

  /** D2: redrive DLQ messages to their origin topic for this group only, rate-capped. */
  redrive(
    group: string,
    options: { messageIds?: readonly string[]; ratePerSecond?: number },
  ): { accepted: number } {
    this.#assertOpen();
    return this.#deadLetters.redrive(group, options);
  }

  /**
   * P5: the message groups of a FIFO group held by a head now, with the head message.
   * @throws BrokerError NOT_FOUND for an unknown group.
   */
  fifoHeads(groupName: string, limit: number): FifoHeadView[] {
    const group = this.#groups.get(groupName);
    if (!group)
      throw BrokerError.of('NOT_FOUND', `group "${groupName}" does not exist`, { group: groupName });
    return describeFifoHeads(group, { records: this.#records, topics: this.#topics }, limit);
  }

  /** Stop the scheduler and close the store after its last flush. Call after sessions are idle. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#deadLetters.close();
    this.#simple.close();
    this.#push.close();
    this.#broadcast.close();
    this.#pushLeases.stop();
    this.#scheduler.stop();
    await this.#retention.stop();
    await this.#watermarks.stop();
    await this.#scheduler.whenIdle();
    // Whatever still waits in memory is written before the store closes.
    this.#records.flush();
    await this.#store.close();
  }

  // ─── Internals ────────────────────────────────────────────────────────────────────────────

  #assertOpen(): void {
    if (this.#closed) throw BrokerError.of('BROKER_UNAVAILABLE', 'the broker is shutting down');
  }

  #describe(group: GroupRuntime): GroupView {
    return describeGroup(group, this.#topics, this.#broadcast.instancesOf(group.name));
  }
}
