import type { TopicConfig } from '@ricochet/core';
import type { TopicRecord } from '../records.js';
import type { AllFields } from './field-table.js';

/** A topic's config as layout 1 stores it. */
export interface StoredTopicConfigV1 {
  readonly type: 'normal' | 'fifo' | 'delay';
  readonly maxBacklogMessages?: number;
}

/** A value of the `topics` database in layout 1. */
export interface StoredTopicV1 {
  readonly name: string;
  readonly config: StoredTopicConfigV1;
  readonly createdAt: number;
}

/** The fields of the engine's topic record and core's topic config the mappers below copy; compiles only while that is all of them. */
export const MAPPED_TOPIC_FIELDS = {
  record: { name: true, config: true, createdAt: true },
  config: { type: true, maxBacklogMessages: true },
} as const satisfies { readonly record: AllFields<TopicRecord>; readonly config: AllFields<TopicConfig> };

/** The engine's topic record as layout 1 stores it; an absent backlog limit stays absent. */
export function toStoredTopic(record: TopicRecord): StoredTopicV1 {
  const { type, maxBacklogMessages } = record.config;
  const config: StoredTopicConfigV1 =
    maxBacklogMessages === undefined ? { type } : { type, maxBacklogMessages };
  return { name: record.name, config, createdAt: record.createdAt };
}

/** A stored topic record as the engine's. */
export function fromStoredTopic(stored: StoredTopicV1): TopicRecord {
  const { type, maxBacklogMessages } = stored.config;
  const config: TopicConfig = maxBacklogMessages === undefined ? { type } : { type, maxBacklogMessages };
  return { name: stored.name, config, createdAt: stored.createdAt };
}
