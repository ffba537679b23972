import { type Clock, type Random, systemClock, systemRandom } from '@ricochet/core';
import type { BrokerConfig } from '../config.js';
import type { BrokerStore } from '../store/broker-store.js';
import { BroadcastDispatch } from './broadcast/broadcast-dispatch.js';
import { BrokerMetrics } from './broker-metrics.js';
import { DeadLetterAdmin } from './dead-letter/dead-letter-admin.js';
import { DeliveryRate } from './dispatch/delivery-rate.js';
import { PushDispatch } from './dispatch/push-dispatch.js';
import { ReadySource } from './dispatch/ready-source.js';
import { SimpleConsumption } from './dispatch/simple-consumption.js';
import type { EngineEventSink } from './engine-events.js';
import { DueEvents } from './lifecycle/due-events.js';
import { EffectApplier } from './lifecycle/effect-applier.js';
import { LeaseGrant } from './lifecycle/lease-grant.js';
import { Settlement } from './lifecycle/settlement.js';
import { AppendWaker } from './log/append-waker.js';
import { Retention } from './log/retention.js';
import { SendPath } from './log/send-path.js';
import { type StoreWatermarks, watermarksFor } from './log/store-watermarks.js';
import { DeliveryRecords } from './model/delivery-records.js';
import { GroupRegistry } from './model/group-registry.js';
import { TopicRegistry } from './model/topic-registry.js';
import { PushLeaseTable } from './timers/push-lease-table.js';
import { Scheduler } from './timers/scheduler.js';
import { systemTimers, type TimerService } from './timers/timer-service.js';
import { GroupBacklog } from './views/group-backlog.js';

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
  /** X7: where the engine's events go (DLQ moves, pauses and resumes, redrive progress). @default none */
  readonly onEvent?: EngineEventSink;
  /** Given when this engine serves one queue of a partitioned store: what the queues' engines share. */
  readonly shared?: SharedEngineParts;
}

/**
 * What the engines of a partitioned store (one engine per queue, behind `PartitionRouter`) share,
 * so that the broker's limits and metrics stay those of one broker: one set of metrics, one pair
 * of disk watermarks over every queue's store (started and stopped by the router), and R4's
 * backlog summed over the queues.
 */
export interface SharedEngineParts {
  readonly metrics: BrokerMetrics;
  readonly watermarks: StoreWatermarks;
  /** A group's backlog over every queue, for R4. */
  readonly totalBacklogOf: (group: string) => number;
  /** How many queues the store is split into: each keeps its share of a topic's `retentionBytes`. */
  readonly queues: number;
}

/**
 * The engine's parts, each built once and handed the others it calls. Every edge between them is
 * here, in the order they may be built: a part is only given parts built before it (the scheduler
 * gets its listener in `BrokerEngine.start()`, once recovery has run).
 */
export interface EngineParts {
  readonly store: BrokerStore;
  readonly clock: Clock;
  readonly onError: (error: unknown, context: string) => void;
  readonly metrics: BrokerMetrics;
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
  readonly backlog: GroupBacklog;
  readonly watermarks: StoreWatermarks;
  /** False when the watermarks are shared (`SharedEngineParts`): their holder starts and stops them. */
  readonly ownsWatermarks: boolean;
  readonly records: DeliveryRecords;
  readonly scheduler: Scheduler;
  readonly pushLeases: PushLeaseTable;
  readonly applier: EffectApplier;
  readonly settlement: Settlement;
  readonly dueEvents: DueEvents;
  readonly readySource: ReadySource;
  /** X5: groups' delivery rates; the engine registers its gauges and closes it. */
  readonly rate: DeliveryRate;
  readonly sendPath: SendPath;
  readonly simple: SimpleConsumption;
  readonly push: PushDispatch;
  readonly broadcast: BroadcastDispatch;
  readonly retention: Retention;
  readonly deadLetters: DeadLetterAdmin;
}

/** Where an engine's background failures go: `options.onError`, else the console. */
export function errorReporterOf(
  options: Pick<BrokerEngineOptions, 'onError'>,
): (error: unknown, context: string) => void {
  return (
    options.onError ??
    ((error: unknown, context: string) => console.error(`ricochet engine: ${context}`, error))
  );
}

/**
 * The disk and store watermarks for an engine's options, over `storedBytes`: one engine's store,
 * or every queue's of a split store (`PartitionRouter`).
 */
export function watermarksOf(
  options: Omit<BrokerEngineOptions, 'store' | 'shared'>,
  metrics: BrokerMetrics,
  storedBytes: () => number | Promise<number>,
): StoreWatermarks {
  const onError = errorReporterOf(options);
  return watermarksFor(options.config, {
    metrics,
    storedBytes,
    freeDiskBytes: options.freeDiskBytes ?? (async () => undefined),
    onNotice: options.onNotice ?? ((message) => console.warn(`ricochet engine: ${message}`)),
    onError: (error) => onError(error, 'watermark check failed'),
  });
}

/** Build the engine's parts over `options.store`; nothing runs until `BrokerEngine.start()`. */
export function wireEngine(options: BrokerEngineOptions): EngineParts {
  const { store, config } = options;
  const clock = options.clock ?? systemClock;
  const timers = options.timers ?? systemTimers;
  const random = options.random ?? systemRandom;
  const onError = errorReporterOf(options);
  const topics = new TopicRegistry(store, clock, config.autoCreateTopics);
  const groups = new GroupRegistry(store, clock, config.autoCreateGroups, config.deliveryHistory);
  // Broadcast instances are counted by a part built later; the backlog asks only when read.
  let broadcast: BroadcastDispatch | undefined;
  const broadcastInstances = (group: string) => broadcast?.instancesOf(group) ?? [];
  const shared = options.shared;
  const backlog = new GroupBacklog({
    topics,
    groups,
    broadcastInstances,
    totalBacklogOf: shared?.totalBacklogOf,
  });
  const metrics = shared?.metrics ?? new BrokerMetrics({ groupGauges: () => backlog.gauges() });
  const watermarks = shared?.watermarks ?? watermarksOf(options, metrics, () => store.storedBytes());
  // Timers first: the applier writes them; they report what falls due once started.
  const scheduler = new Scheduler({
    store,
    clock,
    timers,
    onError: (error) => onError(error, 'scheduler pass failed'),
  });
  const records = new DeliveryRecords(store, groups, timers, scheduler, topics.restartHorizon);
  const appendWaker = new AppendWaker(groups, (group, topic) => backlog.reads(group, topic));
  const pushLeases = new PushLeaseTable(clock, timers);
  const applier = new EffectApplier({
    store,
    records,
    clock,
    timers,
    topics,
    groups,
    metrics,
    scheduler,
    pushLeases,
    appendWaker,
    onNotice: options.onNotice,
    onEvent: options.onEvent,
  });
  const decided = { clock, random, groups, records };
  const settlement = new Settlement({ ...decided, applier });
  const dueEvents = new DueEvents({
    ...decided,
    applier,
    metrics,
    maxReadyQueuePerGroup: config.maxReadyQueuePerGroup,
  });
  pushLeases.start((lease) => dueEvents.onPushLeaseExpired(lease));
  const leaseGrant = new LeaseGrant({ clock, random, applier });
  const rate = new DeliveryRate({ clock, timers, metrics, share: 1 / (shared?.queues ?? 1) });
  const readySource = new ReadySource({
    records,
    topics,
    groups,
    clock,
    applier,
    metrics,
    scheduler,
    rate,
    maxReadyQueuePerGroup: config.maxReadyQueuePerGroup,
  });
  const sendPath = new SendPath({
    store,
    clock,
    topics,
    metrics,
    maxBodyBytes: config.maxBodyBytes,
    dedupWindowMs: config.dedupWindowMs,
    maxDelayMs: config.maxDelayMs,
    onAppended: (topic) => appendWaker.appended(topic),
    throttle: (topic) => watermarks.refusal() ?? backlog.throttle(topic),
  });
  const simple = new SimpleConsumption({ groups, readySource, leaseGrant, timers });
  let lastSubscriptionId = 0;
  const nextSubscriptionId = () => ++lastSubscriptionId;
  const push = new PushDispatch({
    groups,
    readySource,
    leaseGrant,
    settlement,
    pushLeases,
    nextSubscriptionId,
  });
  broadcast = new BroadcastDispatch({
    store,
    clock,
    timers,
    topics,
    groups,
    metrics,
    applier,
    nextSubscriptionId,
  });
  const retention = new Retention({
    store,
    clock,
    timers,
    topics,
    groups,
    records,
    metrics,
    broadcast: broadcast.retention,
    sendPending: (messageId) => sendPath.isPending(messageId),
    dedupWindowMs: config.dedupWindowMs,
    retentionBytesShare: 1 / (shared?.queues ?? 1),
    intervalMs: config.retentionCheckIntervalMs,
    onError: (error) => onError(error, 'retention pass failed'),
  });
  const deadLetters = new DeadLetterAdmin({
    topics,
    groups,
    applier,
    timers,
    onEvent: options.onEvent,
    clock,
  });
  return {
    store,
    clock,
    onError,
    metrics,
    topics,
    groups,
    backlog,
    watermarks,
    ownsWatermarks: shared === undefined,
    records,
    scheduler,
    pushLeases,
    applier,
    settlement,
    dueEvents,
    readySource,
    rate,
    sendPath,
    simple,
    push,
    broadcast,
    retention,
    deadLetters,
  };
}
