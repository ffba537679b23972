import { DEAD_LETTER_CAUSES } from '@ricochet/core';
import fc from 'fast-check';
import type { StoredMessage } from '../records.js';

const text = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 30 }));
const timeMs = fc.oneof(fc.nat({ max: 2 ** 45 }), fc.constant(Date.UTC(2026, 10, 30, 12, 0, 0, 1)));
const PLAIN = { noNullPrototype: true } as const;

const deadLetter = fc.record(
  {
    group: text,
    originTopic: text,
    originOffset: fc.nat(),
    attempts: fc.nat({ max: 1_000 }),
    reason: text,
    deadLetteredAt: timeMs,
    cause: fc.constantFrom(...DEAD_LETTER_CAUSES),
    firstFailedAt: timeMs,
    lastLease: fc.nat(),
    redrivenAt: timeMs,
  },
  {
    requiredKeys: [
      'group',
      'originTopic',
      'originOffset',
      'attempts',
      'reason',
      'deadLetteredAt',
      'lastLease',
    ],
    ...PLAIN,
  },
);

/** Every field of a stored message, each optional one present or absent, strings ASCII or not. */
export const storedMessage: fc.Arbitrary<StoredMessage> = fc.record(
  {
    messageId: text,
    topic: text,
    offset: fc.oneof(fc.nat(), fc.constant(Number.MAX_SAFE_INTEGER)),
    tag: text,
    keys: fc.array(text, { maxLength: 3 }),
    messageGroup: text,
    properties: fc.dictionary(text, text, { maxKeys: 4, ...PLAIN }),
    body: fc.uint8Array({ maxLength: 600 }),
    bornAt: timeMs,
    storedAt: timeMs,
    deliverAt: timeMs,
    deadLetter,
  },
  { requiredKeys: ['messageId', 'topic', 'offset', 'body', 'bornAt', 'storedAt'], ...PLAIN },
);
