import type { GroupConfigInput, TopicConfig } from '@ricochet/core';
import type { DeliveredMessage, OutgoingMessage, SendReceipt } from '@ricochet/protocol';
import {
  type AdminCallAnswer,
  type AdminCallArgs,
  BrokerEngine,
  type BrokerEngineOptions,
  BrokerMetrics,
  type BrokerService,
  DEFAULT_REDRIVE_RATE_PER_SECOND,
  type DeadLetterPage,
  errorReporterOf,
  type FifoHeadView,
  type GroupView,
  type MessageView,
  malformedReceiptHandle,
  type NamePage,
  type QueueAdminCall,
  RedrivePacer,
  type RepeatableAdminCall,
  type RetentionPassReport,
  type ServiceReceiveRequest,
  type ServiceSubscribeRequest,
  type SettleFailure,
  type SettleItem,
  type StoreWatermarks,
  systemTimers,
  type TopicBacklog,
  type TopicView,
  watermarksOf,
  withQueue,
} from '../../engine/index.js';
import type { BrokerStore } from '../../store/broker-store.js';
import type { RemoteQueue } from '../peers/remote-queue.js';
import { ClusterBacklog, mergeTopicBacklogs } from './cluster-backlog.js';
import {
  deadLetterStarts,
  mergeDeadLetterPages,
  mergeFifoHeads,
  mergeGroupViews,
  mergeNamePages,
  mergeTopicViews,
  messageViewOfQueue,
  sumGroupGauges,
} from './merged-views.js';
import { QueueRotation, routeHandle } from './queue-addressing.js';
import { receiveOverQueues, redriveOverQueues, sendOverQueues, settleOverQueues } from './queue-fan-out.js';
import { QueueSubscriptions } from './queue-subscriptions.js';
import { RerouteWaits } from './reroute-waits.js';
import { ForwardedQueue, LocalQueue, PendingQueue, type RoutedQueue } from './routed-queue.js';
import { StormCounts } from './storm-counts.js';

/** A queue another broker owns, as the router is given it: its messaging and its admin calls. */
export interface RemoteQueueParts {
  readonly messaging: RemoteQueue;
  readonly admin: QueueAdminCall;
}

/**
 * The broker over a store split into queues (DESIGN.md §9): one {@link BrokerEngine} per queue,
 * each over a store of its own, behind the same {@link BrokerService} the gateways and the admin
 * routes use with one engine. Every rule of DESIGN.md §3 holds because a message never leaves its
 * queue: its retries, leases, delays and DLQ copy stay in the engine that stored it, and the
 * router only decides where a request goes and joins the answers.
 *
 * - A send goes to the queue of its message group, or of its id (`queue-addressing.ts`).
 * - Consumption spans every queue: a push subscription subscribes in each, spending one shared
 *   credit pool, so the client never holds more than its credit in all (`credit-pool.ts`); a
 *   receive leases from the queues in turn, and a waiting receive waits on all of them with one
 *   shared budget, so it never leases more than asked.
 * - Receipt handles and offsets name their queue (`queue-addressing.ts`).
 * - Admin calls are made in every queue on its owner (`QUEUE_ADMIN_CALLS`): topic and group
 *   configs written, waiting for a queue between owners as a send does, and reads asked again on
 *   a queue's next route when its owner went away mid-call (`reroute-waits.ts`); the reads' answers
 *   are joined (`merged-views.ts`).
 * - The engines share one set of metrics, one pair of disk watermarks over every queue's store,
 *   and R4's backlog summed over the queues.
 *
 * A queue may also be owned by another broker (`RemoteQueueParts`): the router then forwards
 * what is for it (`routed-queue.ts`). R4 is then checked over every queue before a send goes
 * anywhere (`cluster-backlog.ts`), and a DLQ redrive is paced over every queue by this broker
 * (`queue-fan-out.ts`). The shared parts, retention and the metrics' gauges are this broker's
 * queues' only: each broker answers for what it stores.
 */
export class PartitionRouter implements BrokerService {
  readonly metrics: BrokerMetrics;
  /** Queue `i` as routed now; {@link replaceQueue} changes it when its owner changes. */
  readonly #queues: RoutedQueue[];
  /**
   * The engines of the queues this broker owns now, kept as the queues change hands: R4's check
   * sums their backlogs on every send.
   */
  #engines: BrokerEngine[] = [];
  readonly #engineOptions: BrokerEngineOptions;
  readonly #watermarks: StoreWatermarks;
  readonly #redrives: RedrivePacer;
  readonly #clusterBacklog = new ClusterBacklog({ queues: () => this.#queues, now: () => Date.now() });
  readonly #subscriptions: QueueSubscriptions;
  readonly #onError: (error: unknown, context: string) => void;
  /** Which queue a receive looks at first. */
  readonly #receiveRotation: QueueRotation;
  /** This broker gave a queue up (`replaceQueue` away from its engine): its sessions between brokers close. */
  onQueueGivenUp: ((queue: number) => void) | undefined;
  /** Sends and admin writes waiting for a queue's next route (`reroute-waits.ts`). */
  readonly #reroutes: RerouteWaits;
  /** The failure-storm rule over every queue of a group (DESIGN.md §11). */
  readonly #stormCounts: StormCounts;
  #started = false;

  /**
   * Queue `i` over `queues[i]`: an engine over a store this broker owns, or another broker's
   * queue; at least two.
   */
  constructor(
    queues: readonly (BrokerStore | RemoteQueueParts | undefined)[],
    options: Omit<BrokerEngineOptions, 'store' | 'shared'>,
  ) {
    if (queues.length < 2) throw new Error('a partitioned store has at least two queues');
    this.metrics = new BrokerMetrics({
      groupGauges: () => sumGroupGauges(this.#engines.map((engine) => engine.groupGauges())),
    });
    // Every queue's size, those owned elsewhere asked of their owners: each broker's local copy
    // holds every queue, so the store a send would grow is the whole of it.
    this.#watermarks = watermarksOf(options, this.metrics, () => this.storedBytes());
    const shared = {
      metrics: this.metrics,
      watermarks: this.#watermarks,
      totalBacklogOf: (group: string) =>
        this.#engines.reduce((backlog, engine) => backlog + engine.groupBacklog(group), 0),
      queues: queues.length,
    };
    this.#engineOptions = { ...options, shared } as BrokerEngineOptions;
    this.#onError = errorReporterOf(options);
    this.#queues = queues.map((parts, queue) => this.#routedQueue(queue, parts));
    this.#engines = enginesOf(this.#queues);
    this.#subscriptions = new QueueSubscriptions(this.#queues, this.#onError);
    this.#receiveRotation = new QueueRotation(queues.length);
    this.#redrives = new RedrivePacer(options.timers ?? systemTimers);
    const timers = options.timers ?? systemTimers;
    this.#reroutes = new RerouteWaits((queue) => this.#queues[queue], { clock: options.clock, timers });
    this.#stormCounts = new StormCounts({ queues: () => this.#queues, timers, onError: this.#onError });
  }

  /** How many queues the store is split into. */
  get queues(): number {
    return this.#queues.length;
  }

  /**
   * Route `queue` anew: to an engine over a store this broker now owns, to the queue's owner
   * elsewhere, or nowhere while it is between owners (`undefined`). What was routed before stops:
   * the client subscriptions in it end there (what they held is released, C2) and are made again
   * in the new one; a local engine closes, giving its store's lease back. Requests already made
   * to it end as they do when an engine closes (`503`, which clients retry).
   */
  async replaceQueue(queue: number, parts: BrokerStore | RemoteQueueParts | undefined): Promise<void> {
    const old = this.#queues[queue];
    if (old === undefined) throw new RangeError(`no queue ${queue}`);
    const next = this.#routedQueue(queue, parts);
    this.#queues[queue] = next;
    this.#engines = enginesOf(this.#queues);
    if (next.engine && this.#started) next.engine.start();
    this.#reroutes.rerouted(queue);
    await this.#subscriptions.move(queue, old, next);
    // Before the old engine closes: what the sessions between brokers held in it is released (C2).
    if (old.engine) this.onQueueGivenUp?.(queue);
    await old.close();
  }

  queueService(queue: number): BrokerService | undefined {
    return this.#queues[queue]?.engine;
  }

  start(): void {
    this.#started = true;
    for (const engine of this.#engines) engine.start();
    this.#stormCounts.start();
    void this.#watermarks.start().catch((error: unknown) => this.#onError(error, 'watermark check failed'));
  }

  // ─── Messaging ────────────────────────────────────────────────────────────────────────────

  /**
   * Each message goes to its queue. With queues owned elsewhere, R4 is checked over the cluster
   * first (`cluster-backlog.ts`): a message for a throttled topic is refused here, `530`.
   */
  async send(messages: readonly OutgoingMessage[]): Promise<SendReceipt[]> {
    const refusals =
      this.#engines.length < this.queues
        ? await this.#clusterBacklog.refusals(new Set(messages.map((message) => message.topic)))
        : undefined;
    return sendOverQueues(
      this.#queues,
      messages,
      refusals,
      (refusal) => this.metrics.rejected(refusal.code),
      this.#reroutes.onEachRoute,
    );
  }

  async register(group: string, subscriptions: Readonly<Record<string, string>>): Promise<void> {
    await Promise.all(this.#queues.map((queue) => queue.register(group, subscriptions)));
  }

  /** A receive over every queue in turn, or this broker's only for `scope: 'owned'` (`queue-fan-out.ts`). */
  receive(request: ServiceReceiveRequest): Promise<DeliveredMessage[]> {
    return receiveOverQueues(this.#queues, this.#receiveRotation.next(), request, this.#onError);
  }

  ack(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]> {
    return settleOverQueues(
      this.#queues,
      receiptHandles.map((receiptHandle) => ({ receiptHandle })),
      (queue, items) =>
        queue.ack(
          items.map((item) => item.receiptHandle),
          settledBy,
        ),
    );
  }

  nack(items: readonly SettleItem[], settledBy?: string): Promise<SettleFailure[]> {
    return settleOverQueues(this.#queues, items, (queue, routed) => queue.nack(routed, settledBy));
  }

  release(receiptHandles: readonly string[], settledBy?: string): Promise<SettleFailure[]> {
    return settleOverQueues(
      this.#queues,
      receiptHandles.map((receiptHandle) => ({ receiptHandle })),
      (queue, items) =>
        queue.release(
          items.map((item) => item.receiptHandle),
          settledBy,
        ),
    );
  }

  async changeInvisibleDuration(
    receiptHandle: string,
    invisibleDurationMs: number,
  ): Promise<{ readonly messageId: string; readonly receiptHandle: string }> {
    const routed = routeHandle(receiptHandle, this.queues);
    if (routed === undefined) throw malformedReceiptHandle();
    const queue = this.#queues[routed.queue] as RoutedQueue;
    const changed = await queue.changeInvisibleDuration(routed.handle, invisibleDurationMs);
    return { messageId: changed.messageId, receiptHandle: withQueue(changed.receiptHandle, routed.queue) };
  }

  subscribe(request: ServiceSubscribeRequest): Promise<number> {
    return this.#subscriptions.subscribe(request);
  }

  unsubscribe(subscriptionId: number): Promise<boolean> {
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
    const [first] = await this.#onEveryOwner('putTopic', () => [name, config]);
    return first as { name: string; config: TopicConfig };
  }

  async describeTopic(name: string): Promise<TopicView | undefined> {
    return mergeTopicViews(await this.#onEveryOwner('describeTopic', () => [name]));
  }

  async topicBacklog(topic: string): Promise<TopicBacklog | undefined> {
    return mergeTopicBacklogs(topic, await this.#onEveryOwner('topicBacklog', () => [topic]));
  }

  /** A page of names over every queue (a topic a send created exists in the queues it reached). */
  async listTopics(afterName: string | undefined, limit: number): Promise<NamePage<TopicView>> {
    const pages = await this.#onEveryOwner('listTopics', () => [afterName, limit]);
    return mergeNamePages(pages, limit, mergeTopicViews);
  }

  async putGroup(name: string, input: GroupConfigInput): Promise<GroupView> {
    const views = await this.#onEveryOwner('putGroup', () => [name, input]);
    return mergeGroupViews(views) as GroupView;
  }

  /** Every queue pauses or resumes its share of the group (DESIGN.md §11). */
  async pauseGroup(name: string, paused: boolean): Promise<GroupView | undefined> {
    const views = await this.#onEveryOwner('pauseGroup', () => [name, paused]);
    return mergeGroupViews(views);
  }

  async describeGroup(name: string): Promise<GroupView | undefined> {
    return mergeGroupViews(await this.#onEveryOwner('describeGroup', () => [name]));
  }

  async listGroups(afterName: string | undefined, limit: number): Promise<NamePage<GroupView>> {
    const pages = await this.#onEveryOwner('listGroups', () => [afterName, limit]);
    return mergeNamePages(pages, limit, mergeGroupViews);
  }

  async describeMessage(messageId: string): Promise<MessageView | undefined> {
    const views = await this.#onEveryOwner('describeMessage', () => [messageId]);
    const queue = views.findIndex((view) => view !== undefined);
    const view = views[queue];
    return view === undefined ? undefined : messageViewOfQueue(view, queue, this.queues);
  }

  async listDeadLetters(group: string, fromOffset: number, limit: number): Promise<DeadLetterPage> {
    const starts = deadLetterStarts(fromOffset, this.queues);
    const pages = await this.#onEveryOwner('listDeadLetters', (queue) => [
      group,
      starts[queue] as number,
      limit,
    ]);
    return mergeDeadLetterPages(pages, this.queues, limit);
  }

  /** D2 over every queue, at `ratePerSecond` in all, whichever broker owns each (`queue-fan-out.ts`). */
  redrive(
    group: string,
    options: { messageIds?: readonly string[]; ratePerSecond?: number },
  ): Promise<{ accepted: number }> {
    return redriveOverQueues(
      this.#queues,
      this.#redrives,
      group,
      {
        ...options,
        ratePerSecond: options.ratePerSecond ?? DEFAULT_REDRIVE_RATE_PER_SECOND,
      },
      this.#onError,
    );
  }

  async fifoHeads(groupName: string, limit: number): Promise<FifoHeadView[]> {
    const perQueue = await this.#onEveryOwner('fifoHeads', () => [groupName, limit]);
    return mergeFifoHeads(perQueue, this.queues, limit);
  }

  /** Every queue's size, read at each watermark check (never per send). */
  async storedBytes(): Promise<number> {
    // An owner that does not answer counts as nothing until it does, as a queue between owners
    // does: the watermarks are a brake on growth, and its route changes when its lease does.
    const perQueue = await Promise.all(
      this.#queues.map((queue) => queue.admin('storedBytes').catch(() => 0)),
    );
    return perQueue.reduce((sum, bytes) => sum + bytes, 0);
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
    this.#reroutes.stop();
    for (const engine of this.#engines) engine.drain();
  }

  async close(): Promise<void> {
    this.#reroutes.stop();
    this.#stormCounts.stop();
    this.#redrives.close();
    await this.#watermarks.stop();
    await Promise.all(this.#queues.map((queue) => queue.close()));
  }

  // ─── Internals ────────────────────────────────────────────────────────────────────────────

  /**
   * An admin call made in every queue on its owner, with `argsOf(queue)`: a read, or a write that
   * sets a state. Made again on a queue's next route when it met the queue between owners or its
   * owner went away mid-call (`reroute-waits.ts`), so a write right after brokers start and a
   * listing during a queue move answer instead of failing `503`. Each queue's answer, in queue order.
   */
  #onEveryOwner<K extends RepeatableAdminCall>(
    call: K,
    argsOf: (queue: number) => AdminCallArgs<K>,
  ): Promise<AdminCallAnswer<K>[]> {
    return this.#reroutes.onEveryOwner(this.queues, (routed) => routed.admin(call, ...argsOf(routed.queue)));
  }

  #routedQueue(queue: number, parts: BrokerStore | RemoteQueueParts | undefined): RoutedQueue {
    if (parts === undefined) return new PendingQueue(queue);
    if (isRemote(parts)) return new ForwardedQueue(parts.messaging, parts.admin, this.#onError);
    return new LocalQueue(queue, new BrokerEngine({ ...this.#engineOptions, store: parts }));
  }
}

function enginesOf(queues: readonly RoutedQueue[]): BrokerEngine[] {
  return queues.flatMap((queue) => queue.engine ?? []);
}

function isRemote(parts: BrokerStore | RemoteQueueParts): parts is RemoteQueueParts {
  return 'messaging' in parts;
}
