import type { TopicConfig } from '@ricochet/core';
import type { TopicRecord } from '../records.js';
import type { AllFields } from './field-table.js';

/** A topic's config as layout 1 stores it; the fields added since are absent from older records. */
export interface StoredTopicConfigV1 {
  readonly type: 'normal' | 'fifo' | 'delay';
  readonly maxBacklogMessages?: number;
  /** Absent from topics stored before retention existed: the engine reads it as the default (72 h). */
  readonly retentionMs?: number;
  readonly retentionBytes?: number;
}

/** A value of the `topics` database in layout 1. */
export interface StoredTopicV1 {
  readonly name: string;
  readonly config: StoredTopicConfigV1;
  readonly createdAt: number;
  /** The lowest offset retention has kept; absent until retention first removed a message. */
  readonly firstOffset?: number;
  /** Every message below it is deleted but the survivors from `firstOffset` on; absent like `firstOffset`. */
  readonly expiredBelow?: number;
}

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/** The fields of the engine's topic record and core's topic config the mappers below copy; compiles only while that is all of them. */
export const MAPPED_TOPIC_FIELDS = {
  record: { name: true, config: true, createdAt: true, firstOffset: true, expiredBelow: true },
  config: { type: true, maxBacklogMessages: true, retentionMs: true, retentionBytes: true },
} as const satisfies { readonly record: AllFields<TopicRecord>; readonly config: AllFields<TopicConfig> };

/** The engine's topic record as layout 1 stores it; absent optional fields stay absent, in the order layout 1 began with. */
export function toStoredTopic(record: TopicRecord): StoredTopicV1 {
  const stored: Writable<StoredTopicV1> = {
    name: record.name,
    config: copyConfig(record.config),
    createdAt: record.createdAt,
  };
  if (record.firstOffset !== undefined) stored.firstOffset = record.firstOffset;
  if (record.expiredBelow !== undefined) stored.expiredBelow = record.expiredBelow;
  return stored;
}

/** A stored topic record as the engine's. */
export function fromStoredTopic(stored: StoredTopicV1): TopicRecord {
  const record: Writable<TopicRecord> = {
    name: stored.name,
    config: copyConfig(stored.config),
    createdAt: stored.createdAt,
  };
  if (stored.firstOffset !== undefined) record.firstOffset = stored.firstOffset;
  if (stored.expiredBelow !== undefined) record.expiredBelow = stored.expiredBelow;
  return record;
}

function copyConfig(config: TopicConfig | StoredTopicConfigV1): TopicConfig {
  const copy: Writable<TopicConfig> = { type: config.type };
  if (config.maxBacklogMessages !== undefined) copy.maxBacklogMessages = config.maxBacklogMessages;
  if (config.retentionMs !== undefined) copy.retentionMs = config.retentionMs;
  if (config.retentionBytes !== undefined) copy.retentionBytes = config.retentionBytes;
  return copy;
}
