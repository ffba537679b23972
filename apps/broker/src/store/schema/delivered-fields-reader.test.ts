import { type DeliveredFields, packDeliveredFields, unpackDeliveredFields } from '@ricochet/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readCommonFields } from './delivered-fields-reader.js';

const text = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ minLength: 32, maxLength: 300 }),
);

/** The common message's fields, with every size of string, body and timestamp MessagePack has a form for. */
const commonFields = fc.record(
  {
    messageId: text,
    topic: text,
    tag: text,
    messageGroup: text,
    body: fc.oneof(fc.uint8Array({ maxLength: 300 }), fc.constant(new Uint8Array(70_000))),
    bornAt: fc.oneof(
      fc.nat({ max: 0x7f }),
      fc.nat({ max: 0xffff }),
      fc.nat(),
      fc.constant(Date.UTC(2026, 10, 30)),
    ),
  },
  { requiredKeys: ['messageId', 'topic', 'body', 'bornAt'], noNullPrototype: true },
);

describe('the common message’s fields', () => {
  it('are read by hand as msgpackr reads them', () => {
    fc.assert(
      fc.property(commonFields, fc.nat({ max: 3 }), (fields, padding) => {
        const packed = packDeliveredFields(fields);
        // At an offset inside a larger record, as the store reads them: a Buffer (as the store's
        // records are, whose text Node decodes) or a plain array (TextDecoder's).
        const record =
          padding % 2 === 0 ? Buffer.alloc(padding + packed.length) : new Uint8Array(padding + packed.length);
        record.set(packed, padding);
        const read = readCommonFields(record, padding, fields.topic);
        expect(read).toBeDefined();
        const { body, ...rest } = read as DeliveredFields;
        const { body: expectedBody, ...expected } = unpackDeliveredFields(packed);
        expect(rest).toStrictEqual(expected);
        // Compared as bytes: a deep comparison of a 70,000-byte array element by element is slow.
        expect(Buffer.compare(body, expectedBody)).toBe(0);
      }),
      { numRuns: 500, seed: 20_261_133 },
    );
  });

  it('are left to msgpackr when the message has keys, properties or dead-letter details', () => {
    const base = { messageId: 'm', topic: 't', body: new Uint8Array([1]), bornAt: 1 };
    for (const extra of [
      { keys: ['k'] },
      { properties: { a: 'b' } },
      { deadLetter: { originTopic: 't', attempts: 1, reason: 'r', deadLetteredAt: 2 } },
    ]) {
      expect(readCommonFields(packDeliveredFields({ ...base, ...extra }), 0, 't')).toBeUndefined();
    }
  });
});
