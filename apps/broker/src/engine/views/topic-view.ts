import { groupOfDlqTopic, type TopicStats, type TopicView } from '@ricochet/protocol';
import type { GroupRegistry } from '../model/group-registry.js';
import type { TopicRuntime } from '../model/topic-registry.js';

// A topic's answer is one schema in @ricochet/protocol, which the admin routes are checked against.
export type { TopicStats, TopicView };

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
