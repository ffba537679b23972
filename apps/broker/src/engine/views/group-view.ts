import { windowCounts } from '@ricochet/core';
import type { GroupPauseView, GroupPositions, GroupStats, GroupView } from '@ricochet/protocol';
import type { BroadcastInstance } from '../broadcast/broadcast-instance.js';
import type { GroupRuntime } from '../model/group-registry.js';
import type { TopicRegistry } from '../model/topic-registry.js';

// A group's answer is one schema in @ricochet/protocol, which the admin routes are checked against.
// Its `stats.topics` (GroupPositions) holds per topic the group's cursor and the topic's first
// retained offset: retention moves a cursor that falls behind up to it (DESIGN.md §5).
export type { GroupPositions, GroupStats, GroupView };

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
  nowMs = 0,
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
    pause: pauseViewOf(group, nowMs),
  };
}

/** A group's breaker and manual pause (DESIGN.md §11), with its window's failure ratio at `nowMs`. */
export function pauseViewOf(group: GroupRuntime, nowMs: number): GroupPauseView {
  const { breaker, manuallyPaused } = group.pause;
  const config = group.config.pauseOnFailures;
  const view: GroupPauseView = { state: breaker.state, manuallyPaused, failureRatio: 0 };
  if (breaker.state === 'open') view.nextProbeAt = breaker.nextProbeAtMs;
  if (config === undefined) return view;
  const { successes, failures, failureRatio } = windowCounts(group.pause, config, nowMs);
  view.failureRatio = failureRatio;
  view.counted = { successes, failures };
  return view;
}
