import type { GroupConfigInput, OutcomeCounts, TopicConfig } from '@ricochet/core';
import { windowCounts } from '@ricochet/core';
import {
  BrokerError,
  type DeliveredMessage,
  type OutgoingMessage,
  type SendReceipt,
} from '@ricochet/protocol';
import type { StoredMessage } from '../store/records.js';
import type { BrokerMetrics } from './broker-metrics.js';
import type { BrokerService, ServiceSubscribeRequest } from './broker-service.js';
import type { DeadLetterPage } from './dead-letter/dead-letter-admin.js';
import type { ReceiveRequest } from './dispatch/simple-consumption.js';
import { type BrokerEngineOptions, type EngineParts, wireEngine } from './engine-parts.js';
import { driveGroupPause } from './lifecycle/lifecycle-driver.js';
import { recoverDeliveries } from './lifecycle/recovery.js';
import {
  type SettleFailure,
  type SettleItem,
  type SettleVerb,
  settleSplit,
} from './lifecycle/settle-item.js';

import type { RetentionPassReport } from './log/retention.js';
import type { GroupRuntime } from './model/group-registry.js';
import type { NamePage } from './model/name-order.js';
import { describeFifoHeads, type FifoHeadView } from './views/fifo-view.js';
import type { TopicBacklog } from './views/group-backlog.js';
import { describeGroup, type GroupView } from './views/group-view.js';
import { describeMessage, type MessageView } from './views/message-view.js';
import { describeTopic, type TopicView } from './views/topic-view.js';

export type { BrokerEngineOptions } from './engine-parts.js';

/**
 * The broker's engine: topics, groups, the send path, consumption, the scheduler and the DLQ,
 * over a durable store. Transport-agnostic: the WebSocket gateway and the admin routes call it.
 */
export class BrokerEngine implements BrokerService {
  readonly metrics: BrokerMetrics;
  readonly #parts: EngineParts;
  #closed = false;

  constructor(options: BrokerEngineOptions) {
    this.#parts = wireEngine(options);
    this.metrics = this.#parts.metrics;
  }

  /** Load the stored state, recover in-flight deliveries, and start the scheduler. */
  start(): void {
    this.#parts.topics.load();
    this.#parts.groups.load();
    recoverDeliveries({
      clock: this.#parts.clock,
      store: this.#parts.store,
      groups: this.#parts.groups,
      applier: this.#parts.applier,
      settlement: this.#parts.settlement,
      dueEvents: this.#parts.dueEvents,
      scheduler: this.#parts.scheduler,
    });
    this.#parts.broadcast.load();
    this.#parts.scheduler.start((group, due) => this.#parts.dueEvents.onDue(group, due));
    this.#parts.retention.start();
    if (this.#parts.ownsWatermarks) {
      void this.#parts.watermarks
        .start()
        .catch((error: unknown) => this.#parts.onError(error, 'watermark check failed'));
    }
  }

  /** Run a retention pass now (after one in progress); they also run every `retentionCheckIntervalMs`. */
  runRetentionPass(): Promise<RetentionPassReport> {
    this.#assertOpen();
    return this.#parts.retention.runPass();
  }

  /** Read free disk space and the store's size now, and refuse or accept sends accordingly. */
  checkWatermarks(): Promise<void> {
    return this.#parts.watermarks.check();
  }

  // ─── Messaging ────────────────────────────────────────────────────────────────────────────

  send(messages: readonly OutgoingMessage[]): Promise<SendReceipt[]> {
    this.#assertOpen();
    return this.#parts.sendPath.send(messages);
  }

  /** Register a simple consumer's subscriptions: the group's position is taken now. */
  register(group: string, subscriptions: Readonly<Record<string, string>>): void {
    this.#assertOpen();
    this.#parts.simple.register(group, subscriptions);
  }

  receive(request: ReceiveRequest): Promise<DeliveredMessage[]> {
    this.#assertOpen();
    return this.#parts.simple.receive(request);
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
    const changed = this.#parts.settlement.changeInvisibility(receiptHandle, invisibleDurationMs);
    this.#parts.applier.flushTurn();
    await this.#parts.store.durable();
    return changed;
  }

  /** Start a push subscription (P1; B1 for a broadcasting group); returns its id. */
  /** One store is one queue: queue 0. */
  queueService(queue: number): BrokerService | undefined {
    return queue === 0 ? this : undefined;
  }

  subscribe(request: ServiceSubscribeRequest): number {
    this.#assertOpen();
    const group = this.#parts.groups.require(request.group);
    if (group.config.consumeMode === 'broadcasting') return this.#parts.broadcast.subscribe(group, request);
    return this.#parts.push.subscribe(group, request);
  }

  unsubscribe(subscriptionId: number): boolean {
    return this.#parts.push.unsubscribe(subscriptionId) || this.#parts.broadcast.unsubscribe(subscriptionId);
  }

  credit(subscriptionId: number, credits: number): void {
    if (!this.#parts.broadcast.credit(subscriptionId, credits))
      this.#parts.push.credit(subscriptionId, credits);
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
    this.#parts.push.endSubscriptions(subscriptionIds);
    this.#parts.broadcast.endSubscriptions(subscriptionIds);
  }

  /**
   * Settle a batch — broadcast deliveries and clustering ones alike — and answer once durable.
   * A frame may carry 1,024 handles: they are settled {@link SETTLE_CHUNK} at a time, each chunk
   * in a turn of its own, so that one frame never holds the event loop for milliseconds (the
   * deliveries, due retries and sends waiting behind it would all be late by that much).
   */
  async #settleDurably(
    items: readonly SettleItem[],
    verb: SettleVerb,
    settledBy: string | undefined,
  ): Promise<SettleFailure[]> {
    this.#assertOpen();
    const failures: SettleFailure[] = [];
    for (let start = 0; start < items.length; start += SETTLE_CHUNK) {
      if (start > 0) {
        await nextTurn();
        this.#assertOpen();
      }
      const chunk =
        start === 0 && items.length <= SETTLE_CHUNK ? items : items.slice(start, start + SETTLE_CHUNK);
      const chunkFailures = settleSplit(
        chunk,
        (broadcast) => this.#parts.broadcast.settle(broadcast, verb, settledBy),
        (clustering) => this.#parts.settlement.settle(clustering, verb, settledBy),
      );
      for (const { index, error } of chunkFailures) failures.push({ index: start + index, error });
    }
    this.#parts.applier.flushTurn();
    await this.#parts.store.durable();
    return failures;
  }

  // ─── Admin ────────────────────────────────────────────────────────────────────────────────

  /**
   * Create or replace a topic's config; answers once the config is durable, so a config the admin
   * API confirmed survives `kill -9`.
   */
  async putTopic(name: string, config: TopicConfig): Promise<{ name: string; config: TopicConfig }> {
    const topic = this.#parts.topics.put(name, config);
    await this.#parts.store.durable();
    return { name: topic.name, config: topic.record.config };
  }

  /** A topic as `GET /v1/topics/:topic` shows it, or `undefined` when it does not exist. */
  describeTopic(name: string): TopicView | undefined {
    const topic = this.#parts.topics.get(name);
    return topic && describeTopic(topic, this.#parts.groups);
  }

  /** Up to `limit` topics (DLQ topics too) named after `afterName`, by name, from memory. */
  listTopics(afterName: string | undefined, limit: number): NamePage<TopicView> {
    const page = this.#parts.topics.page(afterName, limit);
    return {
      items: page.items.map((topic) => describeTopic(topic, this.#parts.groups)),
      lastName: page.lastName,
    };
  }

  /** Create or replace a group's config; answers once it is durable (it survives `kill -9`). */
  async putGroup(name: string, input: GroupConfigInput): Promise<GroupView> {
    const group = this.#parts.groups.put(name, input);
    // A breaker left open by a rule now turned off closes (DESIGN.md §11).
    driveGroupPause(this.#parts, group, { type: 'ruleChanged', atMs: this.#parts.clock.now() });
    const view = this.#describe(group);
    await this.#parts.store.durable();
    return view;
  }

  /** Pause a group by hand, or resume it and close its breaker (DESIGN.md §11); answers once durable. */
  async pauseGroup(name: string, paused: boolean): Promise<GroupView | undefined> {
    const group = this.#parts.groups.get(name);
    if (!group) return undefined;
    driveGroupPause(this.#parts, group, { type: paused ? 'pause' : 'resume', atMs: this.#parts.clock.now() });
    await this.#parts.store.durable();
    return this.#describe(group);
  }

  /** What the group's other queues count (DESIGN.md §9): its failure-storm rule trips on the whole group. */
  countedElsewhere(name: string, counts: OutcomeCounts): void {
    const group = this.#parts.groups.get(name);
    const atMs = this.#parts.clock.now();
    if (group) driveGroupPause(this.#parts, group, { type: 'elsewhereCounted', counts, atMs });
  }

  /**
   * What the window of each group with the failure-storm rule on counts now (DESIGN.md §11), by
   * group: what this queue tells the group's other queues (`cluster/routing/storm-counts.ts`).
   */
  stormWindows(): Map<string, OutcomeCounts> {
    const atMs = this.#parts.clock.now();
    const windows = new Map<string, OutcomeCounts>();
    for (const group of this.#parts.groups.withStormRule()) {
      const rule = group.config.pauseOnFailures;
      if (rule === undefined) continue;
      const { successes, failures } = windowCounts(group.pause, rule, atMs);
      windows.set(group.name, { successes, failures });
    }
    return windows;
  }

  /** A group as `GET /v1/groups/:group` shows it, or `undefined` when it does not exist. */
  describeGroup(name: string): GroupView | undefined {
    const group = this.#parts.groups.get(name);
    return group && this.#describe(group);
  }

  /** Up to `limit` groups named after `afterName`, by name, from memory. */
  listGroups(afterName: string | undefined, limit: number): NamePage<GroupView> {
    const page = this.#parts.groups.page(afterName, limit);
    return { items: page.items.map((group) => this.#describe(group)), lastName: page.lastName };
  }

  /**
   * A message by id and where it stands in every group that consumes its topic. Read once every
   * write queued before the call has committed: the history a consumer's last ack or the DLQ copy
   * it was just delivered wrote is in the answer.
   */
  async describeMessage(messageId: string): Promise<MessageView | undefined> {
    await this.#parts.store.committed();
    return describeMessage(messageId, {
      store: this.#parts.store,
      topics: this.#parts.topics,
      groups: this.#parts.groups,
      records: this.#parts.records,
      clock: this.#parts.clock,
      broadcastInstances: (group) => this.#parts.broadcast.instancesOf(group),
    });
  }

  /** A group's R4 backlog in this engine's store (0 for a group it does not know). */
  groupBacklog(name: string): number {
    const group = this.#parts.groups.get(name);
    return group === undefined ? 0 : this.#parts.backlog.of(group);
  }

  /** R4 for a topic in this engine's store: its limit and its readers' backlogs (`undefined`: no such topic). */
  topicBacklog(topic: string): TopicBacklog | undefined {
    return this.#parts.backlog.ofTopic(topic);
  }

  /** Whether the group has messages Ready again (retries, expired leases, due delays) waiting for credit. */
  hasReadyAgain(name: string): boolean {
    return (this.#parts.groups.get(name)?.readyQueue.size ?? 0) > 0;
  }

  /** Per group, its inflight count and backlog, as the metrics' gauges read them. */
  groupGauges(): Iterable<{ readonly group: string; readonly inflight: number; readonly backlog: number }> {
    return this.#parts.backlog.gauges();
  }

  /** The store's size, as the watermarks read it. */
  storedBytes(): number {
    return this.#parts.store.storedBytes();
  }

  /** Start shutting down: waiting receives answer now (with nothing), so requests can finish. */
  drain(): void {
    this.#parts.simple.close();
    this.#parts.push.close();
    this.#parts.broadcast.close();
  }

  /** D2: a page of the group's DLQ. @throws BrokerError NOT_FOUND for an unknown group. */
  listDeadLetters(group: string, fromOffset: number, limit: number): DeadLetterPage {
    return this.#parts.deadLetters.list(group, fromOffset, limit);
  }

  /** D2: redrive DLQ messages to their origin topic for this group only, rate-capped. */
  redrive(
    group: string,
    options: { messageIds?: readonly string[]; ratePerSecond?: number },
  ): { accepted: number } {
    this.#assertOpen();
    return this.#parts.deadLetters.redrive(group, options);
  }

  /** D2, for a router over queues that paces one redrive over all of them: what this queue would redrive. */
  redrivable(group: string, messageIds?: readonly string[]): StoredMessage[] {
    return this.#parts.deadLetters.redrivable(group, messageIds);
  }

  /** D2: make messages {@link redrivable} named Ready for their group again, now. */
  redriveNow(group: string, messages: readonly StoredMessage[]): void {
    this.#assertOpen();
    this.#parts.deadLetters.redriveNow(group, messages);
  }

  /**
   * P5: the message groups of a FIFO group held by a head now, with the head message.
   * @throws BrokerError NOT_FOUND for an unknown group.
   */
  fifoHeads(groupName: string, limit: number): FifoHeadView[] {
    const group = this.#parts.groups.get(groupName);
    if (!group)
      throw BrokerError.of('NOT_FOUND', `group "${groupName}" does not exist`, { group: groupName });
    return describeFifoHeads(group, { records: this.#parts.records, topics: this.#parts.topics }, limit);
  }

  /** Stop the scheduler and close the store after its last flush. Call after sessions are idle. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#parts.deadLetters.close();
    this.#parts.simple.close();
    this.#parts.push.close();
    this.#parts.broadcast.close();
    this.#parts.applier.groupPause.close();
    this.#parts.rate.close();
    this.#parts.pushLeases.stop();
    this.#parts.scheduler.stop();
    await this.#parts.retention.stop();
    if (this.#parts.ownsWatermarks) await this.#parts.watermarks.stop();
    await this.#parts.scheduler.whenIdle();
    // Whatever still waits in memory is written before the store closes.
    this.#parts.records.flush();
    await this.#parts.store.close();
  }

  // ─── Internals ────────────────────────────────────────────────────────────────────────────

  #assertOpen(): void {
    if (this.#closed) throw BrokerError.of('BROKER_UNAVAILABLE', 'the broker is shutting down');
  }

  #describe(group: GroupRuntime): GroupView {
    return describeGroup(
      group,
      this.#parts.topics,
      this.#parts.broadcast.instancesOf(group.name),
      this.#parts.clock.now(),
    );
  }
}

/** Handles settled per turn of the event loop: about half a millisecond of work. */
const SETTLE_CHUNK = 64;

/**
 * After the I/O waiting now. Not a timer: the engine's timers may run on a virtual clock (tests,
 * @ricochet/testing), and yielding the loop has nothing to do with time.
 */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
