import type { TopicConfig } from '@ricochet/core';
import type { TopicRuntime } from './topic-registry.js';

/** A topic's offsets for `GET /v1/topics/:topic` and `GET /v1/topics` (DESIGN.md §5). */
export interface TopicStats {
  /** The lowest offset still stored. */
  readonly firstOffset: number;
  /** The offset the next message will get. */
  readonly nextOffset: number;
  /** Messages retained: `nextOffset - firstOffset`. */
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
 * cannot drift apart.
 */
export function describeTopic(topic: TopicRuntime): TopicView {
  // This broker has no retention yet and keeps every message, so the log always starts at 0 and
  // every offset handed out is still stored. Retention (DESIGN.md §5) will move firstOffset.
  const firstOffset = 0;
  return {
    name: topic.name,
    config: topic.record.config,
    stats: { firstOffset, nextOffset: topic.nextOffset, messages: topic.nextOffset - firstOffset },
  };
}
