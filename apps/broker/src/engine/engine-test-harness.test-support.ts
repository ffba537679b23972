import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { broadcastTransition, initialBroadcastState, ManualClock, type Random } from '@ricochet/core';
import type { BrokerStore } from '../store/broker-store.js';
import { openLmdbStore } from '../store/lmdb-store.js';
import type { StoredMessage } from '../store/records.js';
import type { BroadcastDelivery } from './broadcast/broadcast-instance.js';
import type { BrokerMetrics } from './broker-metrics.js';
import { DeliveryRate } from './dispatch/delivery-rate.js';
import { ReadySource } from './dispatch/ready-source.js';
import { DueEvents } from './lifecycle/due-events.js';
import { EffectApplier } from './lifecycle/effect-applier.js';
import { LeaseGrant } from './lifecycle/lease-grant.js';
import { Settlement } from './lifecycle/settlement.js';
import { AppendWaker } from './log/append-waker.js';
import { DeliveryRecords } from './model/delivery-records.js';
import { GroupRegistry } from './model/group-registry.js';
import { TopicRegistry } from './model/topic-registry.js';
import { ManualTimers } from './timers/manual-timers.test-support.js';
import { PushLeaseTable } from './timers/push-lease-table.js';
import { type DueEntry, Scheduler } from './timers/scheduler.js';

/** The clustering side of the engine over one harness, wired as BrokerEngine wires it. */
export interface ClusteringParts {
  readonly applier: EffectApplier;
  readonly records: DeliveryRecords;
  readonly scheduler: Scheduler;
  readonly pushLeases: PushLeaseTable;
  readonly settlement: Settlement;
  readonly dueEvents: DueEvents;
  readonly leaseGrant: LeaseGrant;
  readonly readySource: ReadySource;
}

export interface ClusteringOptions {
  /** @default 10_000, the broker's default */
  readonly maxReadyQueuePerGroup?: number;
  /** Jitter for exponential retry policies. @default () => 0.5 */
  readonly random?: Random;
}

/** The fields of a test message besides its place in the log; all optional. */
export type MessageFields = Partial<Omit<StoredMessage, 'topic' | 'offset'>>;

/** When every harness's clock starts, in epoch ms. */
export const START_MS = 1_000_000;

/**
 * A real LMDB store in a temporary directory, a manual clock and timers, and the topic and group
 * registries over them (auto-creation on), for unit tests of the engine's modules. `restart`
 * reopens the same directory as a broker restart would; `close` removes it.
 */
export class EngineHarness {
  readonly dir: string;
  readonly clock: ManualClock;
  store: BrokerStore;
  timers: ManualTimers;
  topics: TopicRegistry;
  groups: GroupRegistry;

  constructor(name: string, startMs = START_MS) {
    this.dir = mkdtempSync(join(tmpdir(), `ricochet-${name}-`));
    this.clock = new ManualClock(startMs);
    this.store = openLmdbStore({ path: this.dir, flushPolicy: 'commit' });
    this.timers = new ManualTimers(this.clock);
    this.topics = new TopicRegistry(this.store, this.clock, true);
    this.groups = new GroupRegistry(this.store, this.clock, true);
  }

  /**
   * The engine's real effect applier over this harness's store, registries and timers, with its
   * own scheduler (started with `onDue`, which by default takes nothing) and push lease table.
   */
  applier(
    metrics: BrokerMetrics,
    onDue: (group: string, due: readonly unknown[]) => number = () => 0,
  ): { applier: EffectApplier; records: DeliveryRecords; scheduler: Scheduler; pushLeases: PushLeaseTable } {
    const scheduler = new Scheduler({ store: this.store, clock: this.clock, timers: this.timers });
    scheduler.start(onDue);
    const records = new DeliveryRecords(
      this.store,
      this.groups,
      this.timers,
      scheduler,
      this.topics.restartHorizon,
    );
    const pushLeases = new PushLeaseTable(this.clock, this.timers);
    const applier = new EffectApplier({
      store: this.store,
      records,
      clock: this.clock,
      timers: this.timers,
      topics: this.topics,
      groups: this.groups,
      metrics,
      scheduler,
      pushLeases,
      appendWaker: new AppendWaker(this.groups, () => true),
    });
    return { applier, records, scheduler, pushLeases };
  }

  /**
   * The applier with everything around it that moves clustering deliveries — settlement, due
   * events (the scheduler's entries and push lease deadlines go to it), lease grants and the ready
   * source — wired as the engine wires them. Call it again after {@link restart}.
   */
  clustering(metrics: BrokerMetrics, options: ClusteringOptions = {}): ClusteringParts {
    const random = options.random ?? (() => 0.5);
    let dueEvents: DueEvents | undefined;
    const { applier, records, scheduler, pushLeases } = this.applier(
      metrics,
      (group, due) => dueEvents?.onDue(group, due as readonly DueEntry[]) ?? 0,
    );
    const decided = { clock: this.clock, random, groups: this.groups, records };
    const settlement = new Settlement({ ...decided, applier });
    dueEvents = new DueEvents({
      ...decided,
      applier,
      metrics,
      maxReadyQueuePerGroup: options.maxReadyQueuePerGroup ?? 10_000,
    });
    const due = dueEvents;
    pushLeases.start((lease) => due.onPushLeaseExpired(lease));
    const leaseGrant = new LeaseGrant({ clock: this.clock, random, applier });
    const readySource = new ReadySource({
      records,
      topics: this.topics,
      groups: this.groups,
      clock: this.clock,
      applier,
      metrics,
      scheduler,
      rate: new DeliveryRate({ clock: this.clock, timers: this.timers, metrics }),
      maxReadyQueuePerGroup: options.maxReadyQueuePerGroup ?? 10_000,
    });
    return { applier, records, scheduler, pushLeases, settlement, dueEvents: due, leaseGrant, readySource };
  }

  /**
   * Append a message to a topic (created on first use) as the send path does: it gets the next
   * offset and its id is indexed. Its id defaults to `<topic>-<offset>`.
   */
  append(topic: string, fields: MessageFields = {}): StoredMessage {
    const runtime = this.topics.require(topic);
    const nowMs = this.clock.now();
    const message = this.topics.append(runtime, (offset) => ({
      messageId: `${topic}-${offset}`,
      body: new Uint8Array([offset % 256]),
      bornAt: nowMs,
      storedAt: nowMs,
      ...fields,
      topic,
      offset,
    }));
    void this.store.putMessageLocation(message.messageId, { topic, offset: message.offset, storedAt: nowMs });
    return message;
  }

  /** Append `count` messages to a topic. */
  appendMany(topic: string, count: number, fields: (index: number) => MessageFields = () => ({})) {
    return Array.from({ length: count }, (_, index) => this.append(topic, fields(index)));
  }

  /** Resolves once every queued store write is visible to reads. */
  committed(): Promise<void> {
    return this.store.committed();
  }

  /** Close the store and reopen the directory with fresh timers and loaded registries. */
  async restart(): Promise<void> {
    await this.store.close();
    this.store = openLmdbStore({ path: this.dir, flushPolicy: 'commit' });
    this.timers = new ManualTimers(this.clock);
    this.topics = new TopicRegistry(this.store, this.clock, true);
    this.groups = new GroupRegistry(this.store, this.clock, true);
    this.topics.load();
    this.groups.load();
  }

  /** Close the store and remove its directory. */
  async close(): Promise<void> {
    await this.store.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Let `setImmediate` work (the broadcast dispatcher's turns) run: a few macrotask turns. */
export async function turns(count = 3): Promise<void> {
  for (let i = 0; i < count; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

/**
 * A message a broadcast instance holds: Inflight (delivered at `atMs`, leased for `leaseMs`), or
 * Ready again as after a release. Its id is `<topic>-<offset>`, as {@link EngineHarness.append}'s.
 */
export function heldDelivery(
  topic: string,
  offset: number,
  state: 'inflight' | 'ready' = 'inflight',
  atMs = START_MS,
  leaseMs = 60_000,
): BroadcastDelivery {
  let current = initialBroadcastState();
  const delivered = broadcastTransition(current, { type: 'delivered', atMs, leaseDurationMs: leaseMs });
  if (!delivered.ok) throw new Error(delivered.rejection.message);
  current = delivered.state;
  if (state === 'ready') {
    const released = broadcastTransition(current, { type: 'released', atMs, lease: 1 });
    if (!released.ok) throw new Error(released.rejection.message);
    current = released.state;
  }
  return { topic, offset, messageId: `${topic}-${offset}`, state: current, deliveredAt: atMs };
}

/** A metric's value for one group (0 when it has none). */
export async function groupMetric(metrics: BrokerMetrics, name: string, group = 'g'): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  const values = (await metric?.get())?.values ?? [];
  return values.find((value) => value.labels.group === group)?.value ?? 0;
}
