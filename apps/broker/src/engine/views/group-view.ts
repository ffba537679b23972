import type { GroupConfig } from '@ricochet/core';
import type { BroadcastInstance } from '../broadcast/broadcast-instance.js';
import type { GroupRuntime } from '../model/group-registry.js';
import type { TopicRegistry } from '../model/topic-registry.js';

/** A group's numbers for `GET /v1/groups/:group` and `GET /v1/groups` (DESIGN.md §4). */
export interface GroupStats {
  /** Never dispatched yet, plus Ready again (released, retry or lease expired, delay due). */
  readonly ready: number;
  readonly inflight: number;
  readonly waitingRetry: number;
  /** Dead-lettered and not redriven since. */
  readonly dlq: number;
  readonly committed: number;
}

/**
 * Per topic the group reads: its cursor (the next offset to dispatch) and the topic's first
 * retained offset. Retention moves a cursor that falls behind the first offset up to it
 * (DESIGN.md §5), counting what it skipped in `ricochet_messages_expired_total{group}`.
 */
export type GroupPositions = Readonly<
  Record<string, { readonly cursor: number; readonly firstOffset: number }>
>;

/** A group as the admin API shows it. */
export interface GroupView {
  readonly name: string;
  readonly config: GroupConfig;
  readonly stats: GroupStats & { readonly topics: GroupPositions };
}

/**
 * A group's stats, derived from its runtime counters and its topics' offsets. A broadcasting
 * group's `ready` adds up what each of its instances has still to be delivered (B1).
 */
export function groupStatsOf(
  group: GroupRuntime,
  topics: TopicRegistry,
  instances: readonly BroadcastInstance[] = [],
): GroupStats {
  let instancesReady = 0;
  for (const instance of instances)
    instancesReady += instance.backlog((name) => topics.get(name)?.nextOffset);
  return {
    ready: group.undispatched((name) => topics.get(name)) + group.readyQueue.size + instancesReady,
    inflight: group.inflight,
    waitingRetry: group.waitingRetry,
    dlq: group.deadLettered - group.redriven,
    committed: group.committed,
  };
}

/**
 * Describe a group: the one builder behind the PUT and GET of a group and the listing, so they
 * cannot drift apart.
 */
export function describeGroup(
  group: GroupRuntime,
  topics: TopicRegistry,
  instances: readonly BroadcastInstance[] = [],
): GroupView {
  const positions = Object.fromEntries(
    [...group.cursors].map(([topic, cursor]) => [
      topic,
      { cursor, firstOffset: topics.get(topic)?.retained.firstOffset ?? 0 },
    ]),
  );
  return {
    name: group.name,
    config: group.config,
    stats: { ...groupStatsOf(group, topics, instances), topics: positions },
  };
}
