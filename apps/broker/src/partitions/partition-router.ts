import type { GroupConfigInput, TopicConfig } from '@ricochet/core';
import type { DeliveredMessage, OutgoingMessage, SendReceipt } from '@ricochet/protocol';
import { BrokerEngine, type BrokerEngineOptions } from '../engine/broker-engine.js';
import { BrokerMetrics } from '../engine/broker-metrics.js';
import type { BrokerService } from '../engine/broker-service.js';
import { DEFAULT_REDRIVE_RATE_PER_SECOND, type DeadLetterPage } from '../engine/dead-letter-admin.js';
import { errorReporterOf, watermarksOf } from '../engine/engine-parts.js';
import type { FifoHeadView } from '../engine/fifo-view.js';
import type { GroupView } from '../engine/group-view.js';
import type { MessageView } from '../engine/message-view.js';
import type { NamePage } from '../engine/name-page.js';
import type { SubscribeRequest } from '../engine/push-dispatch.js';
import { RedrivePacer } from '../engine/redrive-pacer.js';
import type { RetentionPassReport } from '../engine/retention.js';
import { malformedReceiptHandle, type SettleFailure, type SettleItem } from '../engine/settle-item.js';
import type { ReceiveBudget, ReceiveRequest } from '../engine/simple-consumption.js';
import type { StoreWatermarks } from '../engine/store-watermarks.js';
import { systemTimers } from '../engine/timer-service.js';
import type { TopicView } from '../engine/topic-view.js';
import type { BrokerStore } from '../store/broker-store.js';
import {
  deadLetterStarts,
  deliveryOfQueue,
  mergeDeadLetterPages,
  mergeFifoHeads,
  mergeGroupViews,
  mergeNamePages,
  mergeTopicViews,
  messageViewOfQueue,
  sumGroupGauges,
} from './merged-views.js';
import { QueueRotation, queueOf } from './queue-choice.js';
import { tagHandle, untagHandle } from './queue-handles.js';
import { topicOffset } from './queue-offsets.js';
import { QueueSubscriptions } from './queue-subscriptions.js';

/**
 * The broker over a store split into queues (DESIGN.md §9): one {@link BrokerEngine} per queue,
 * each over a store of its own, behind the same {@link BrokerService} the gateways and the admin
 * routes use with one engine. Every rule of DESIGN.md §3 holds because a message never leaves its
 * queue: its retries, leases, delays and DLQ copy stay in the engine that stored it, and the
 * router only decides where a request goes and joins the answers.
 *
 * - A send goes to the queue of its message group, or of its id (`queue-choice.ts`).
 * - Consumption spans every queue: a push subscription subscribes in each, spending one shared
 *   credit pool, so the client never holds more than its credit in all (`credit-pool.ts`); a
 *   receive leases from the queues in turn, and a waiting receive waits on all of them with one
 *   shared budget, so it never leases more than asked.
 * - Receipt handles and offsets name their queue (`queue-handles.ts`, `queue-offsets.ts`).
 * - Topic and group configs are written to every queue; admin reads join the queues' answers
 *   (`merged-views.ts`).
 * - The engines share one set of metrics, one pair of disk watermarks over every queue's store,
 *   and R4's backlog summed over the queues.
 */
export class PartitionRouter implements BrokerService {
  readonly metrics: BrokerMetrics;
  readonly #engines: readonly BrokerEngine[];
  readonly #watermarks: StoreWatermarks;
  readonly #redrives: RedrivePacer;
  readonly #subscriptions: QueueSubscriptions;
  readonly #onError: (error: unknown, context: string) => void;
  /** Which queue a receive looks at first. */
  readonly #receiveRotation: QueueRotation;

  /** Engines over `stores`, queue `i` over `stores[i]`; at least two. */
  constructor(stores: readonly BrokerStore[], options: Omit<BrokerEngineOptions, 'store' | 'shared'>) {
    if (stores.length < 2) throw new Error('a partitioned store has at least two queues');
    let engines: BrokerEngine[] = [];
    this.metrics = new BrokerMetrics({
      groupGauges: () => sumGroupGauges(engines.map((engine) => engine.groupGauges())),
    });
    this.#watermarks = watermarksOf(options, this.metrics, () =>
      engines.reduce((bytes, engine) => bytes + engine.storedBytes(), 0),
    );
    const shared = {
      metrics: this.metrics,
      watermarks: this.#watermarks,
      totalBacklogOf: (group: string) =>
        engines.reduce((backlog, engine) => backlog + engine.groupBacklog(group), 0),
      queues: stores.length,
    };
    engines = stores.map((store) => new BrokerEngine({ ...options, store, shared }));
    this.#engines = engines;
    this.#subscriptions = new QueueSubscriptions(engines);
    this.#receiveRotation = new QueueRotation(engines.length);
    this.#redrives = new RedrivePacer(options.timers ?? systemTimers);
    this.#onError = errorReporterOf(options);
  }

  /** How many queues the store is split into. */
  get queues(): number {
    return this.#engines.length;
  }

  queueService(queue: number): BrokerService | undefined {
    return this.#engines[queue];
  }

  start(): void {
    for (const engine of this.#engines) engine.start();
    void this.#watermarks.start().catch((error: unknown) => this.#onError(error, 'watermark check failed'));
  }

  // ─── Messaging ────────────────────────────────────────────────────────────────────────────

  async send(messages: readonly OutgoingMessage[]): Promise<SendReceipt[]> {
    const queues = this.queues;
    const byQueue = this.#engines.map(() => ({ indexes: [] as number[], messages: [] as OutgoingMessage[] }));
    messages.forEach((message, index) => {
      const slot = byQueue[queueOf(message, queues)] as (typeof byQueue)[number];
      slot.indexes.push(index);
      slot.messages.push(message);
    });
    const receipts = new Array<SendReceipt>(messages.length);
    await Promise.all(
      byQueue.map(async (slot, queue) => {
        if (slot.messages.length === 0) return;
        const answered = await (this.#engines[queue] as BrokerEngine).send(slot.messages);
        answered.forEach((receipt, i) => {
          receipts[slot.indexes[i] as number] = receipt.ok
            ? { ...receipt, offset: topicOffset(receipt.offset, queue, queues) }
            : receipt;
        });
      }),
    );
    return receipts;
  }

  register(group: string, subscriptions: Readonly<Record<string, string>>): void {
    for (const engine of this.#engines) engine.register(group, subscriptions);
  }

  /**
   * Lease from the queues in turn, each what the others left of `maxMessages`; when none has
   * anything and the receive may wait, wait on every queue at once, with one budget, and answer
   * with what the first to find messages leased (and any other that leased in the same turn).
   */
  async receive(request: ReceiveRequest): Promise<DeliveredMessage[]> {
    const budget: ReceiveBudget = { remaining: request.maxMessages };
    const order = this.#receiveRotation.next();
    const leased: DeliveredMessage[] = [];
    for (const queue of order) {
      if (budget.remaining <= 0) break;
      const engine = this.#engines[queue] as BrokerEngine;
      const found = await engine.receive({ ...request, awaitDurationMs: 0, budget });
      for (const message of found) leased.push(deliveryOfQueue(message, queue, this.queues));
    }
    if (leased.length > 0 || request.awaitDurationMs === 0 || request.signal?.aborted) return leased;
    const stopWaiting = new AbortController();
    const onAbort = () => stopWaiting.abort();
    request.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const perQueue = await Promise.all(
        order.map(async (queue) => {
          const engine = this.#engines[queue] as BrokerEngine;
          const found = await engine.receive({ ...request, budget, signal: stopWaiting.signal });
          // The first queue with messages answers the receive: the others stop waiting.
          if (found.length > 0) stopWaiting.abort();
          return found.map((message) => deliveryOfQueue(message, queue, this.queues));
        }),
      );
      return perQueue.flat();
    } finally {
      stopWaiting.abort();
      request.signal?.removeEventListener('abort', onAbort);
    }
  }

  ack(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]> {
    return this.#settle(
      receiptHandles.map((receiptHandle) => ({ receiptHandle })),
      (engine, items) =>
        engine.ack(
          items.map((item) => item.receiptHandle),
          settledBy,
        ),
    );
  }

  nack(items: readonly SettleItem[], settledBy?: string): Promise<SettleFailure[]> {
    return this.#settle(items, (engine, routed) => engine.nack(routed, settledBy));
  }

  release(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]> {
    return this.#settle(
      receiptHandles.map((receiptHandle) => ({ receiptHandle })),
      (engine, items) =>
        engine.release(
          items.map((item) => item.receiptHandle),
          settledBy,
        ),
    );
  }

  async changeInvisibleDuration(
    receiptHandle: string,
    invisibleDurationMs: number,
  ): Promise<{ readonly messageId: string; readonly receiptHandle: string }> {
    const routed = untagHandle(receiptHandle, this.queues);
    if (routed === undefined) throw malformedReceiptHandle();
    const engine = this.#engines[routed.queue] as BrokerEngine;
    const changed = await engine.changeInvisibleDuration(routed.handle, invisibleDurationMs);
    return { messageId: changed.messageId, receiptHandle: tagHandle(changed.receiptHandle, routed.queue) };
  }

  subscribe(
    request: SubscribeRequest & { readonly group: string; readonly clientId?: string | undefined },
  ): number {
    return this.#subscriptions.subscribe(request);
  }

  unsubscribe(subscriptionId: number): boolean {
    return this.#subscriptions.unsubscribe(subscriptionId);
  }

  credit(subscriptionId: number, credits: number): void {
    this.#subscriptions.credit(subscriptionId, credits);
  }

  endSubscriptions(subscriptionIds: readonly number[]): void {
    this.#subscriptions.end(subscriptionIds);
  }

  // ─── Admin ────────────────────────────────────────────────────────────────────────────────

  async putTopic(name: string, config: TopicConfig): Promise<{ name: string; config: TopicConfig }> {
    const [first] = await Promise.all(this.#engines.map((engine) => engine.putTopic(name, config)));
    return first as { name: string; config: TopicConfig };
  }

  describeTopic(name: string): TopicView | undefined {
    return mergeTopicViews(this.#engines.map((engine) => engine.describeTopic(name)));
  }

  /** A page of names over every queue (a topic a send created exists in the queues it reached). */
  listTopics(afterName: string | undefined, limit: number): NamePage<TopicView> {
    return mergeNamePages(
      this.#engines.map((engine) => engine.listTopics(afterName, limit)),
      limit,
      (name) => this.describeTopic(name),
    );
  }

  async putGroup(name: string, input: GroupConfigInput): Promise<GroupView> {
    await Promise.all(this.#engines.map((engine) => engine.putGroup(name, input)));
    return this.describeGroup(name) as GroupView;
  }

  describeGroup(name: string): GroupView | undefined {
    return mergeGroupViews(this.#engines.map((engine) => engine.describeGroup(name)));
  }

  listGroups(afterName: string | undefined, limit: number): NamePage<GroupView> {
    return mergeNamePages(
      this.#engines.map((engine) => engine.listGroups(afterName, limit)),
      limit,
      (name) => this.describeGroup(name),
    );
  }

  async describeMessage(messageId: string): Promise<MessageView | undefined> {
    const views = await Promise.all(this.#engines.map((engine) => engine.describeMessage(messageId)));
    const queue = views.findIndex((view) => view !== undefined);
    const view = views[queue];
    return view === undefined ? undefined : messageViewOfQueue(view, queue, this.queues);
  }

  listDeadLetters(group: string, fromOffset: number, limit: number): DeadLetterPage {
    const starts = deadLetterStarts(fromOffset, this.queues);
    const pages = this.#engines.map((engine, queue) =>
      engine.listDeadLetters(group, starts[queue] as number, limit),
    );
    return mergeDeadLetterPages(pages, this.queues, limit);
  }

  /**
   * D2 over every queue: the DLQ copies each queue would redrive, in the order they were
   * dead-lettered, paced at `ratePerSecond` in all (each queue redrives its own, when its turn comes).
   */
  redrive(
    group: string,
    options: { messageIds?: readonly string[]; ratePerSecond?: number },
  ): { accepted: number } {
    const queued = this.#engines
      .flatMap((engine, queue) =>
        engine.redrivable(group, options.messageIds).map((message) => ({ queue, message })),
      )
      .sort(
        (a, b) =>
          (a.message.deadLetter?.deadLetteredAt ?? 0) - (b.message.deadLetter?.deadLetteredAt ?? 0) ||
          a.message.offset - b.message.offset,
      );
    this.#redrives.pace(queued, options.ratePerSecond ?? DEFAULT_REDRIVE_RATE_PER_SECOND, (slice) => {
      this.#engines.forEach((engine, queue) => {
        const ofQueue = slice.filter((item) => item.queue === queue).map((item) => item.message);
        if (ofQueue.length > 0) engine.redriveNow(group, ofQueue);
      });
    });
    return { accepted: queued.length };
  }

  fifoHeads(groupName: string, limit: number): FifoHeadView[] {
    const perQueue = this.#engines.map((engine) => engine.fifoHeads(groupName, limit));
    return mergeFifoHeads(perQueue, this.queues, limit);
  }

  async runRetentionPass(): Promise<RetentionPassReport> {
    let deletedMessages = 0;
    let batches = 0;
    let longestBatchMs = 0;
    for (const engine of this.#engines) {
      const report = await engine.runRetentionPass();
      deletedMessages += report.deletedMessages;
      batches += report.batches;
      longestBatchMs = Math.max(longestBatchMs, report.longestBatchMs);
    }
    return { deletedMessages, batches, longestBatchMs };
  }

  checkWatermarks(): Promise<void> {
    return this.#watermarks.check();
  }

  drain(): void {
    for (const engine of this.#engines) engine.drain();
  }

  async close(): Promise<void> {
    this.#redrives.close();
    await this.#watermarks.stop();
    await Promise.all(this.#engines.map((engine) => engine.close()));
  }

  // ─── Internals ────────────────────────────────────────────────────────────────────────────

  /**
   * Settle each handle in the queue it names, the queues at once; a handle that names no queue is
   * refused like any handle the broker did not issue. Failures keep the batch's indexes.
   */
  async #settle<TItem extends SettleItem>(
    items: readonly TItem[],
    settleIn: (engine: BrokerEngine, items: TItem[]) => Promise<SettleFailure[]>,
  ): Promise<SettleFailure[]> {
    const failures: SettleFailure[] = [];
    const byQueue = this.#engines.map(() => ({ indexes: [] as number[], items: [] as TItem[] }));
    items.forEach((item, index) => {
      const routed = untagHandle(item.receiptHandle, this.queues);
      if (routed === undefined) {
        failures.push({ index, error: malformedReceiptHandle() });
        return;
      }
      const slot = byQueue[routed.queue] as (typeof byQueue)[number];
      slot.indexes.push(index);
      slot.items.push({ ...item, receiptHandle: routed.handle });
    });
    await Promise.all(
      byQueue.map(async (slot, queue) => {
        if (slot.items.length === 0) return;
        for (const { index, error } of await settleIn(this.#engines[queue] as BrokerEngine, slot.items)) {
          failures.push({ index: slot.indexes[index] as number, error });
        }
      }),
    );
    return failures.sort((a, b) => a.index - b.index);
  }
}
