import type { GroupConfig } from '@ricochet/core';
import type { GroupRuntime } from './group-registry.js';
import type { TopicRegistry } from './topic-registry.js';

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

/** A group as the admin API shows it. */
export interface GroupView {
  readonly name: string;
  readonly config: GroupConfig;
  readonly stats: GroupStats;
}

/** A group's stats, derived from its runtime counters and its topics' offsets. */
export function groupStatsOf(group: GroupRuntime, topics: TopicRegistry): GroupStats {
  return {
    ready: group.undispatched((name) => topics.get(name)) + group.readyQueue.size,
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
export function describeGroup(group: GroupRuntime, topics: TopicRegistry): GroupView {
  return { name: group.name, config: group.config, stats: groupStatsOf(group, topics) };
}
