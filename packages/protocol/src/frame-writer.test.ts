import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeFrame, packWithMsgpackr } from './codec.js';
import { writeFrame } from './frame-writer.js';
import { toHex } from './hex.js';

/** Numbers at every boundary of MessagePack's integer forms, and past them. */
const edgeNumbers = fc.constantFrom(
  0,
  -0,
  0x7f,
  0x80,
  0xff,
  0x100,
  0xffff,
  0x10000,
  0xffff_ffff,
  2 ** 32,
  -1,
  -0x20,
  -0x21,
  -0x80,
  -0x81,
  -0x8000,
  -0x8001,
  -(2 ** 31),
  -(2 ** 31) - 1,
  Number.MAX_SAFE_INTEGER,
  1.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
);

const asciiString = fc.string({
  unit: fc.integer({ min: 0, max: 0x7f }).map((code) => String.fromCharCode(code)),
});

/** The values frames hold (and a few they do not), nested. */
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    asciiString,
    fc.string({ unit: 'binary' }),
    fc.string({ minLength: 0x20, maxLength: 0x120, unit: fc.constantFrom('a', '0', '~') }),
    fc.integer(),
    fc.double(),
    edgeNumbers,
    fc.boolean(),
    fc.constant(null),
    fc.uint8Array({ maxLength: 300 }),
    fc.array(tie('value'), { maxLength: 20 }),
    fc.dictionary(asciiString, fc.option(tie('value'), { nil: undefined }), {
      maxKeys: 20,
      noNullPrototype: true,
    }),
  ),
}));

const hasNonAscii = (input: unknown): boolean => {
  if (typeof input === 'string') return [...input].some((char) => (char.codePointAt(0) ?? 0) >= 0x80);
  if (Array.isArray(input)) return input.some(hasNonAscii);
  if (input instanceof Uint8Array || input === null || typeof input !== 'object') return false;
  return Object.entries(input).some(([key, entry]) => hasNonAscii(key) || hasNonAscii(entry));
};

const DELIVERED_REQUIRED = [
  'messageId',
  'topic',
  'body',
  'bornAt',
  'deliveryAttempt',
  'offset',
  'receiptHandle',
] as const;

describe('writeFrame', () => {
  it('writes exactly the bytes msgpackr writes, or gives up (a string that is not ASCII)', () => {
    fc.assert(
      fc.property(value, (input) => {
        const frame = { type: 'send', value: input };
        const written = writeFrame(frame);
        if (written === undefined) {
          expect(hasNonAscii(frame)).toBe(true);
          return;
        }
        expect(toHex(written)).toBe(toHex(packWithMsgpackr(frame)));
      }),
      { numRuns: 3_000, seed: 20_261_125 },
    );
  });

  it('writes maps with the keys of a plain or delivered message (or a receipt), in any order, with any values, as msgpackr does', () => {
    const shapedKey = fc.constantFrom(
      'messageId',
      'topic',
      'body',
      'bornAt',
      'ok',
      'offset',
      'duplicate',
      'tag',
      'deliveryAttempt',
      'receiptHandle',
    );
    const shaped = fc
      .array(fc.tuple(shapedKey, fc.option(value, { nil: undefined })), { maxLength: 6 })
      .map((entries) => Object.fromEntries(entries));
    const exact = fc.oneof(
      fc.record({ ok: value, messageId: value, offset: value, duplicate: value }, { noNullPrototype: true }),
      fc.record({ messageId: value, topic: value, body: value, bornAt: value }, { noNullPrototype: true }),
      fc.record(
        {
          messageId: value,
          topic: value,
          body: value,
          bornAt: value,
          deliveryAttempt: value,
          offset: value,
          receiptHandle: value,
          tag: value,
        },
        { noNullPrototype: true, requiredKeys: [...DELIVERED_REQUIRED] },
      ),
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(shaped, exact), { maxLength: 4 }), (maps) => {
        const frame = { type: 'sendResult', id: 1, receipts: maps };
        const written = writeFrame(frame);
        if (written === undefined) {
          expect(hasNonAscii(frame)).toBe(true);
          return;
        }
        expect(toHex(written)).toBe(toHex(packWithMsgpackr(frame)));
      }),
      { numRuns: 3_000, seed: 20_261_126 },
    );
  });

  it('writes send frames as msgpackr does, never reusing bytes handed out (sendResult frames by msgpackr between them)', () => {
    const body = new Uint8Array(256).map((_, index) => index);
    const send = {
      type: 'send' as const,
      messages: Array.from({ length: 256 }, (_, index) => ({
        messageId: `019aa6b1f2c07d3e8a41b5c6d7e8${index.toString(16).padStart(4, '0')}`,
        topic: 'orders',
        body,
        bornAt: 1_763_750_000_000 + index,
      })),
      id: 70_000,
    };
    const sendResult = {
      type: 'sendResult' as const,
      id: 70_000,
      receipts: send.messages.map(({ messageId }, offset) => ({
        ok: true as const,
        messageId,
        offset,
        duplicate: false,
      })),
    };
    const frames = Array.from({ length: 40 }, (_, index) =>
      index % 2 === 0 ? encodeFrame(send) : encodeFrame(sendResult),
    );
    const copies = frames.map((frame) => toHex(frame));
    frames.forEach((frame, index) => {
      expect(copies[index]).toBe(toHex(packWithMsgpackr(index % 2 === 0 ? send : sendResult)));
      expect(toHex(frame)).toBe(copies[index]);
    });
  });
});
