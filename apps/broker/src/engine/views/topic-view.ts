import type { TopicConfig } from '@ricochet/core';
import { groupOfDlqTopic } from '@ricochet/protocol';
import type { GroupRegistry } from '../model/group-registry.js';
import type { TopicRuntime } from '../model/topic-registry.js';

/** A topic's offsets for `GET /v1/topics/:topic` and `GET /v1/topics` (DESIGN.md §5). */
export interface TopicStats {
  /** The lowest offset still stored: retention deleted every message below it. */
  readonly firstOffset: number;
  /** The offset the next message will get. */
  readonly nextOffset: number;
  /** Messages retained: from `firstOffset` to `nextOffset`, less those retention deleted around the ones groups held. */
  readonly messages: number;
}

/** A topic as the admin API shows it. */
export interface TopicView {
  readonly name: string;
  readonly config: TopicConfig;
  readonly stats: TopicStats;
}

/**
 * Describe a topic: the one builder behind the single-topic route and the listing, so the two
 * cannot drift apart. A DLQ topic shows the retention it keeps: its group's `dlqRetentionMs`.
 */
export function describeTopic(topic: TopicRuntime, groups?: Pick<GroupRegistry, 'get'>): TopicView {
  const dlqOf = groupOfDlqTopic(topic.name);
  const retentionMs = dlqOf === undefined ? undefined : groups?.get(dlqOf)?.config.dlqRetentionMs;
  const { nextOffset, retained } = topic;
  const config = topic.record.config;
  return {
    name: topic.name,
    config: retentionMs === undefined ? config : { ...config, retentionMs },
    stats: { firstOffset: retained.firstOffset, nextOffset, messages: retained.count(nextOffset) },
  };
}
