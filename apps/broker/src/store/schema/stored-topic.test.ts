import type { TopicConfig } from '@ricochet/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { TopicRecord } from '../records.js';
import { fromStoredTopic, type StoredTopicV1, toStoredTopic } from './stored-topic.js';

const PLAIN = { noNullPrototype: true } as const;

// Typed as core's config, so that a change to its shape fails to compile here too.
const config: fc.Arbitrary<TopicConfig> = fc.record(
  {
    type: fc.constantFrom('normal' as const, 'fifo' as const, 'delay' as const),
    maxBacklogMessages: fc.integer({ min: 1, max: 2 ** 40 }),
    retentionMs: fc.integer({ min: 1, max: 2 ** 40 }),
    retentionBytes: fc.integer({ min: 1, max: 2 ** 40 }),
  },
  { requiredKeys: ['type'], ...PLAIN },
);

const topicRecord: fc.Arbitrary<TopicRecord> = fc.record(
  {
    name: fc.string({ minLength: 1, maxLength: 12 }),
    config,
    createdAt: fc.nat(),
    firstOffset: fc.nat(),
    expiredBelow: fc.nat(),
  },
  { requiredKeys: ['name', 'config', 'createdAt'], ...PLAIN },
);

describe('stored topic records (layout 1)', () => {
  it('map engine → stored → engine to the same record (property)', () => {
    fc.assert(
      fc.property(topicRecord, (engine) => {
        expect(fromStoredTopic(toStoredTopic(engine))).toStrictEqual(engine);
      }),
    );
  });

  it('map stored → engine → stored to the same fields in the same order (property)', () => {
    const stored: fc.Arbitrary<StoredTopicV1> = topicRecord;
    fc.assert(
      fc.property(stored, (record) => {
        const again = toStoredTopic(fromStoredTopic(record));
        expect(again).toStrictEqual(record);
        expect(JSON.stringify(again)).toBe(JSON.stringify(record));
      }),
    );
  });
});
