import {
  type Clock,
  FifoGate,
  type GroupConfigInput,
  type GroupPauseState,
  initialGroupPauseState,
  resolveGroupConfig,
  restoreGroupPauseState,
  storedGroupPause,
} from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';
import type { BrokerStore } from '../../store/broker-store.js';
import type { GroupRecord } from '../../store/records.js';
import { ReadyQueue } from './ready-queue.js';
import type { TopicRuntime } from './topic-registry.js';

/** What the engine holds in memory per group: bounded by design, whatever the backlog. */
export class GroupRuntime {
  readonly name: string;
  record: GroupRecord;
  /** Per topic, the next offset to dispatch: every offset below has been handed out (or filtered). */
  readonly cursors = new Map<string, number>();
  /** Messages that are Ready again, waiting for a consumer; capped, the rest wait on disk. */
  readonly readyQueue = new ReadyQueue();
  /** Messages leased to a consumer right now. */
  inflight = 0;
  /** Messages waiting for their retry delay. */
  waitingRetry = 0;
  committed = 0;
  deadLettered = 0;
  redriven = 0;
  /** P5: for FIFO groups, the one message per (topic, message group) that may be delivered now. */
  readonly fifoGate = new FifoGate();
  /** The failure-storm breaker and the manual pause (DESIGN.md §11); moved by the effect applier only. */
  pause: GroupPauseState = initialGroupPauseState();
  /** Called when the group may have new Ready messages (wakes long polls and push dispatch). */
  readonly #wakeListeners = new Set<() => void>();

  constructor(record: GroupRecord) {
    this.name = record.name;
    this.record = record;
  }

  get config() {
    return this.record.config;
  }

  /** Messages in the group's topics after its cursors: never dispatched yet (tag filters aside). */
  undispatched(topics: (name: string) => TopicRuntime | undefined): number {
    let count = 0;
    for (const [topic, cursor] of this.cursors)
      count += Math.max(0, (topics(topic)?.nextOffset ?? cursor) - cursor);
    return count;
  }

  onWake(listener: () => void): () => void {
    this.#wakeListeners.add(listener);
    return () => this.#wakeListeners.delete(listener);
  }

  wake(): void {
    for (const listener of [...this.#wakeListeners]) listener();
  }
}

/** Groups: their config, created over the admin API or on first use. */
export class GroupRegistry {
  readonly #groups = new Map<string, GroupRuntime>();
  readonly #store: BrokerStore;
  readonly #clock: Clock;
  readonly #autoCreate: boolean;

  constructor(store: BrokerStore, clock: Clock, autoCreate: boolean) {
    this.#store = store;
    this.#clock = clock;
    this.#autoCreate = autoCreate;
  }

  /** Load groups, their cursors and their durable counters. */
  load(): void {
    for (const record of this.#store.listGroups()) {
      // Configs stored by an older broker lack newer fields: they take their defaults.
      const config = resolveGroupConfig(record.config);
      const group = new GroupRuntime({ ...record, config });
      // An open breaker stays open across a restart; a half-open one probes again (DESIGN.md §11).
      group.pause = restoreGroupPauseState(record.pause, this.#clock.now());
      this.#groups.set(record.name, group);
    }
    for (const cursor of this.#store.listCursors())
      this.#groups.get(cursor.group)?.cursors.set(cursor.topic, cursor.nextOffset);
    for (const counters of this.#store.listGroupCounters()) {
      const group = this.#groups.get(counters.group);
      if (!group) continue;
      group.committed = counters.committed;
      group.deadLettered = counters.deadLettered;
      group.redriven = counters.redriven ?? 0;
    }
  }

  get(name: string): GroupRuntime | undefined {
    return this.#groups.get(name);
  }

  list(): GroupRuntime[] {
    return [...this.#groups.values()];
  }

  /**
   * The group a consumer names, created with default config when auto-creation is on.
   * @throws BrokerError NOT_FOUND when it does not exist and may not be created.
   */
  require(name: string): GroupRuntime {
    const existing = this.#groups.get(name);
    if (existing) return existing;
    if (!this.#autoCreate)
      throw BrokerError.of('NOT_FOUND', `group "${name}" does not exist`, { group: name });
    return this.put(name, {});
  }

  /** Create a group or replace its config; fields left out take their defaults (DESIGN.md §2). */
  put(name: string, input: GroupConfigInput): GroupRuntime {
    const existing = this.#groups.get(name);
    const record: GroupRecord = {
      name,
      config: resolveGroupConfig(input),
      createdAt: existing?.record.createdAt ?? this.#clock.now(),
      ...(existing?.record.pause === undefined ? {} : { pause: existing.record.pause }),
    };
    void this.#store.putGroup(record);
    if (existing) {
      existing.record = record;
      return existing;
    }
    const group = new GroupRuntime(record);
    this.#groups.set(name, group);
    return group;
  }

  /** Persist a group's pause state with its record, so a paused or open group stays so after a restart. */
  savePause(group: GroupRuntime): void {
    group.record = { ...group.record, pause: storedGroupPause(group.pause) };
    void this.#store.putGroup(group.record);
  }

  /** Persist a group's cursor on a topic. */
  saveCursor(group: GroupRuntime, topic: string): void {
    const nextOffset = group.cursors.get(topic);
    if (nextOffset !== undefined) void this.#store.putCursor({ group: group.name, topic, nextOffset });
  }

  /** Persist a group's counters. */
  saveCounters(group: GroupRuntime): void {
    void this.#store.putGroupCounters({
      group: group.name,
      committed: group.committed,
      deadLettered: group.deadLettered,
      redriven: group.redriven,
    });
  }
}
