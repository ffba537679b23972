import { BrokerError } from '@ricochet/protocol';
import type { BroadcastInstance } from '../broadcast/broadcast-instance.js';
import type { GroupRegistry, GroupRuntime } from '../model/group-registry.js';
import type { TopicRegistry } from '../model/topic-registry.js';
import { groupStatsOf } from './group-view.js';

export interface GroupBacklogDeps {
  readonly topics: TopicRegistry;
  readonly groups: GroupRegistry;
  /** The instances of a broadcasting group (B1). */
  readonly broadcastInstances: (group: string) => readonly BroadcastInstance[];
  /**
   * A group's backlog for R4, when it is more than this engine's: with one engine per queue of a
   * partitioned store, the sum of every queue's. @default this engine's own ({@link GroupBacklog.of})
   */
  readonly totalBacklogOf?: ((group: string) => number) | undefined;
}

/** R4 as it stands for one topic: its limit, and the backlog of each group reading it. */
export interface TopicBacklog {
  readonly topic: string;
  /** The topic's `maxBacklogMessages`; `undefined` when it has none (never throttled). */
  readonly maxBacklogMessages: number | undefined;
  /** Every group reading the topic, with its backlog (R4's, over every topic it reads). */
  readonly groups: readonly { readonly group: string; readonly backlog: number }[];
}

/** R4's refusal of a send to `topic`: `group` has `backlog` unconsumed messages, `limit` or more. */
export function backlogRefusal(topic: string, group: string, backlog: number, limit: number): BrokerError {
  return BrokerError.of(
    'TOO_MANY_REQUESTS',
    `group "${group}" has ${backlog} unconsumed messages; the limit of "${topic}" is ${limit}`,
    { topic, group, limit },
  );
}

/** What each group has left to consume, for throttling (R4), wake-ups and the backlog gauge. */
export class GroupBacklog {
  readonly #deps: GroupBacklogDeps;

  constructor(deps: GroupBacklogDeps) {
    this.#deps = deps;
  }

  /** R4: the error to refuse a send to `topic` with, when a group reading it is at its limit. */
  throttle(topic: string): BrokerError | undefined {
    const limit = this.#deps.topics.get(topic)?.record.config.maxBacklogMessages;
    if (limit === undefined) return undefined;
    for (const group of this.#deps.groups.readersOf(topic)) {
      if (!this.reads(group, topic)) continue;
      const backlog = this.#deps.totalBacklogOf?.(group.name) ?? this.of(group);
      if (backlog >= limit) return backlogRefusal(topic, group.name, backlog, limit);
    }
    return undefined;
  }

  /** R4 for `topic` in this engine's store alone; `undefined` for a topic it does not have. */
  ofTopic(topic: string): TopicBacklog | undefined {
    const record = this.#deps.topics.get(topic)?.record;
    if (record === undefined) return undefined;
    const groups = [];
    for (const group of this.#deps.groups.readersOf(topic)) {
      if (this.reads(group, topic)) groups.push({ group: group.name, backlog: this.of(group) });
    }
    return { topic, maxBacklogMessages: record.config.maxBacklogMessages, groups };
  }

  /**
   * R4's backlog: everything not yet committed or dead-lettered. A broadcasting group's is that of
   * its furthest-behind instance: each instance consumes every message (B1).
   */
  of(group: GroupRuntime): number {
    if (group.config.consumeMode === 'broadcasting') {
      const nextOffsetOf = (topic: string) => this.#deps.topics.get(topic)?.nextOffset;
      const instances = this.#deps.broadcastInstances(group.name);
      return Math.max(0, ...instances.map((instance) => instance.backlog(nextOffsetOf) + instance.inflight));
    }
    const { ready, inflight, waitingRetry } = groupStatsOf(group, this.#deps.topics);
    return ready + inflight + waitingRetry;
  }

  /** Whether a group reads a topic: it has a cursor there, or one of its broadcast instances has. */
  reads(group: GroupRuntime, topic: string): boolean {
    if (group.cursors.has(topic)) return true;
    if (group.config.consumeMode !== 'broadcasting') return false;
    return this.#deps.broadcastInstances(group.name).some((instance) => instance.cursors.has(topic));
  }

  /** Per group, its inflight count and backlog, for the gauges. */
  *gauges() {
    for (const group of this.#deps.groups.list()) {
      yield { group: group.name, inflight: group.inflight, backlog: this.of(group) };
    }
  }
}
