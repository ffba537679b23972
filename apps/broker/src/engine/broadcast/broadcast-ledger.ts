import type { BroadcastState, Clock } from '@ricochet/core';
import type { BrokerStore } from '../../store/broker-store.js';
import type { HistoryRecord, StoredMessage } from '../../store/records.js';
import { WRITE_BEHIND_MS } from '../model/delivery-records.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import type { TopicRegistry } from '../model/topic-registry.js';
import type { TimerHandle, TimerService } from '../timers/timer-service.js';
import { type BroadcastDelivery, BroadcastInstance, heldKey, instanceKey } from './broadcast-instance.js';

/** How often instances unseen for their group's `broadcastInstanceTtlMs` are looked for. */
const SWEEP_INTERVAL_MS = 60_000;

export interface BroadcastLedgerDeps {
  readonly store: BrokerStore;
  readonly clock: Clock;
  readonly timers: TimerService;
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
}

/**
 * The instances of broadcasting groups (B1) and what is stored of them: a new instance's starting
 * positions are written at once (a restart must not move them to a later `latest`); positions
 * that advance as messages are consumed are written behind, every {@link WRITE_BEHIND_MS}, like
 * clustering cursors — after a crash, history entries tell what the lost window had consumed. An
 * instance without a live subscription is forgotten once its group's `broadcastInstanceTtlMs` has
 * passed since it was last seen.
 */
export class BroadcastLedger {
  readonly #deps: BroadcastLedgerDeps;
  readonly #instances = new Map<string, BroadcastInstance>();
  /** The same instances by group: stats, wake-ups and R4 look a group's up on every append. */
  readonly #byGroup = new Map<string, Set<BroadcastInstance>>();
  readonly #dirty = new Set<BroadcastInstance>();
  #flushTimer: TimerHandle | undefined;
  #sweepTimer: TimerHandle | undefined;

  constructor(deps: BroadcastLedgerDeps) {
    this.#deps = deps;
  }

  /** Load the stored instances, forget those unseen for too long, and start the periodic sweep. */
  load(): void {
    for (const record of this.#deps.store.listBroadcastInstances()) {
      const group = this.#deps.groups.get(record.group);
      if (!group) {
        // Its group is gone: nothing can ever read these positions again.
        void this.#deps.store.deleteBroadcastInstance(record.group, record.clientId);
        continue;
      }
      const instance = new BroadcastInstance(group, record.clientId, record.lastSeenAt);
      for (const [topic, position] of Object.entries(record.positions)) {
        instance.cursors.set(topic, position);
        this.#deps.groups.addReader(group, topic);
      }
      this.#add(instance);
    }
    this.#sweep();
  }

  get(key: string): BroadcastInstance | undefined {
    return this.#instances.get(key);
  }

  all(): IterableIterator<BroadcastInstance> {
    return this.#instances.values();
  }

  instancesOf(group: string): BroadcastInstance[] {
    const instances = this.#byGroup.get(group);
    return instances ? [...instances] : [];
  }

  /**
   * An instance subscribes to `topics`: found or created, with a position in each topic it has
   * not read yet at the group's `startFrom`, now. Forgets the group's expired instances first, so
   * a returning instance past the TTL starts over.
   */
  join(group: GroupRuntime, clientId: string, topics: readonly string[]): BroadcastInstance {
    this.#forgetExpired(group);
    const nowMs = this.#deps.clock.now();
    const key = instanceKey(group.name, clientId);
    const instance = this.#instances.get(key) ?? this.#add(new BroadcastInstance(group, clientId, nowMs));
    instance.lastSeenAt = nowMs;
    for (const topic of topics) {
      if (instance.cursors.has(topic)) continue;
      const runtime = this.#deps.topics.require(topic);
      instance.cursors.set(
        topic,
        group.config.startFrom === 'earliest' ? runtime.retained.expiredBelow : runtime.nextOffset,
      );
      this.#deps.groups.addReader(group, topic);
    }
    this.#dirty.delete(instance);
    void this.#deps.store.putBroadcastInstance(instance.toRecord());
    return instance;
  }

  /** A subscription of the instance started or ended: it counts as seen now. */
  seen(instance: BroadcastInstance): void {
    instance.lastSeenAt = this.#deps.clock.now();
    this.changed(instance);
  }

  /** The instance's position may have moved: write it with the next flush. */
  changed(instance: BroadcastInstance): void {
    this.#dirty.add(instance);
    this.#flushTimer ??= this.#deps.timers.setTimer(WRITE_BEHIND_MS, () => this.flush());
  }

  /** Retention: whether an instance holds the message (delivered and not consumed, or Ready again). */
  holds(topic: string, offset: number): boolean {
    const key = heldKey(topic, offset);
    for (const instance of this.#reading(topic)) if (instance.held.has(key)) return true;
    return false;
  }

  /**
   * The instances that read `topic`, found from the groups that read it (the registry's index)
   * rather than by walking every instance of the broker: an instance holds only messages of topics
   * it has a position in, and taking a position makes its group a reader of the topic.
   */
  *#reading(topic: string): Generator<BroadcastInstance> {
    for (const group of this.#deps.groups.readersOf(topic)) {
      for (const instance of this.#byGroup.get(group.name) ?? []) {
        if (instance.cursors.has(topic)) yield instance;
      }
    }
  }

  /**
   * Retention deleted `topic` below `firstOffset`: instances behind it skip ahead, their positions
   * written in this turn with the deletions. Returns, per group, how many messages were skipped.
   */
  skipExpired(topic: string, firstOffset: number): Map<string, number> {
    const skipped = new Map<string, number>();
    for (const instance of this.#reading(topic)) {
      const cursor = instance.cursors.get(topic);
      if (cursor === undefined || cursor >= firstOffset) continue;
      instance.cursors.set(topic, firstOffset);
      this.#dirty.delete(instance);
      void this.#deps.store.putBroadcastInstance(instance.toRecord());
      const group = instance.group.name;
      skipped.set(group, (skipped.get(group) ?? 0) + firstOffset - cursor);
    }
    return skipped;
  }

  /** Write every changed instance now. */
  flush(): void {
    this.#flushTimer?.cancel();
    this.#flushTimer = undefined;
    for (const instance of this.#dirty) void this.#deps.store.putBroadcastInstance(instance.toRecord());
    this.#dirty.clear();
  }

  /**
   * Whether a past life of the broker had the instance consume `message`: its stored position lagged
   * behind it when the broker stopped. Only messages stored before this process started can be.
   */
  consumedBeforeRestart(instance: BroadcastInstance, message: StoredMessage): boolean {
    if (!this.#deps.topics.restartHorizon.covers(message)) return false;
    return this.#deps.store
      .readHistory(message.messageId)
      .some(
        (entry) =>
          entry.group === instance.group.name &&
          entry.instance === instance.clientId &&
          entry.topic === message.topic &&
          entry.offset === message.offset &&
          entry.result !== 'released',
      );
  }

  /** Record how a delivery to the instance ended, when it left Inflight for `next`. */
  recordHistory(
    instance: BroadcastInstance,
    delivery: BroadcastDelivery,
    inflight: BroadcastState,
    next: BroadcastState,
    settledBy?: string,
  ): void {
    if (inflight.state !== 'inflight') return;
    let result: HistoryRecord['result'];
    let reason: string | undefined;
    if (next.state === 'ready') result = 'released';
    else if (next.state === 'consumed') {
      result = next.outcome === 'succeeded' ? 'committed' : next.outcome;
      reason = next.reason;
    } else return;
    void this.#deps.store.appendHistory(delivery.messageId, {
      group: instance.group.name,
      instance: instance.clientId,
      topic: delivery.topic,
      offset: delivery.offset,
      lease: inflight.lease,
      deliveryAttempt: inflight.deliveryAttempt,
      consumer: 'push',
      consumerId: instance.clientId,
      deliveredAt: delivery.deliveredAt,
      settledAt: this.#deps.clock.now(),
      result,
      ...(reason === undefined ? {} : { reason }),
      ...(settledBy === undefined ? {} : { principal: settledBy }),
    });
  }

  /** Stop the timers and write what changed: the broker is closing. */
  close(): void {
    this.#sweepTimer?.cancel();
    this.#sweepTimer = undefined;
    this.flush();
  }

  #add(instance: BroadcastInstance): BroadcastInstance {
    this.#instances.set(instance.key, instance);
    let instances = this.#byGroup.get(instance.group.name);
    if (!instances) {
      instances = new Set();
      this.#byGroup.set(instance.group.name, instances);
    }
    instances.add(instance);
    return instance;
  }

  #sweep(): void {
    // Only the groups with instances, not every group of the broker: a sweep of a hundred thousand
    // groups copied the list and made an array per group, once a minute, for nothing.
    for (const name of this.#byGroup.keys()) {
      const group = this.#deps.groups.get(name);
      if (group) this.#forgetExpired(group);
    }
    this.#sweepTimer = this.#deps.timers.setTimer(SWEEP_INTERVAL_MS, () => this.#sweep());
  }

  /**
   * B1: forget the group's instances with no live subscription, unseen for its TTL. One that still
   * holds a delivery stays until it is settled, released or timed out: its consumer may still ack
   * it, and forgetting it would leave the delivery counted in the group's inflight for good.
   */
  #forgetExpired(group: GroupRuntime): void {
    const nowMs = this.#deps.clock.now();
    for (const instance of this.instancesOf(group.name)) {
      if (instance.subscriptionIds.size > 0 || instance.inflight > 0) continue;
      if (nowMs - instance.lastSeenAt < group.config.broadcastInstanceTtlMs) continue;
      this.#instances.delete(instance.key);
      const instances = this.#byGroup.get(group.name);
      instances?.delete(instance);
      if (instances?.size === 0) this.#byGroup.delete(group.name);
      this.#dirty.delete(instance);
      void this.#deps.store.deleteBroadcastInstance(group.name, instance.clientId);
    }
  }
}
