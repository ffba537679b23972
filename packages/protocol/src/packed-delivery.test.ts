import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeBrokerFrame, encodeFrame, packWithMsgpackr, unpackTrusted } from './codec.js';
import { packDeliveredFields, unpackDeliveredFields } from './delivered-fields.js';
import { toHex } from './hex.js';
import { type DeliveredFields, PackedDelivery } from './packed-delivery.js';
import type { DeliveredMessage } from './schemas/message.js';

const text = fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }));
const stamp = fc.oneof(fc.constantFrom(0, 2 ** 32, Date.UTC(2026, 10, 30)), fc.nat());

const deadLetter = fc.record(
  {
    originTopic: text,
    attempts: fc.nat({ max: 100 }),
    reason: fc.oneof(text, fc.string({ minLength: 300, maxLength: 400 })),
    deadLetteredAt: stamp,
    cause: text,
    firstFailedAt: stamp,
  },
  { requiredKeys: ['originTopic', 'attempts', 'reason', 'deadLetteredAt'], noNullPrototype: true },
);

/** A delivered message's fixed fields, each optional one present or absent, strings ASCII or not. */
const fields: fc.Arbitrary<DeliveredFields> = fc.record(
  {
    messageId: text,
    topic: text,
    tag: text,
    keys: fc.array(text, { maxLength: 4 }),
    messageGroup: text,
    properties: fc.dictionary(text, text, { maxKeys: 5, noNullPrototype: true }),
    body: fc.uint8Array({ maxLength: 70_000 }),
    bornAt: stamp,
    deadLetter,
  },
  { requiredKeys: ['messageId', 'topic', 'body', 'bornAt'], noNullPrototype: true },
);

const perDelivery = fc.record({
  deliveryAttempt: fc.integer({ min: 1, max: 1_000 }),
  offset: fc.oneof(fc.nat(), fc.constant(Number.MAX_SAFE_INTEGER)),
  receiptHandle: text,
});

/** The plain message a broker builds field by field, in its key order. */
function plain(
  message: DeliveredFields,
  delivery: { deliveryAttempt: number; offset: number; receiptHandle: string },
): DeliveredMessage {
  return { ...message, ...delivery } as DeliveredMessage;
}

describe('packed deliveries', () => {
  it('decode to the same messages as plain ones, in a deliver frame of several', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fields, perDelivery), { minLength: 1, maxLength: 4 }), (entries) => {
        const packed = entries.map(
          ([message, { deliveryAttempt, offset, receiptHandle }]) =>
            new PackedDelivery(message, packDeliveredFields(message), deliveryAttempt, offset, receiptHandle),
        );
        const plainMessages = entries.map(([message, delivery]) => plain(message, delivery));
        const written = encodeFrame({ type: 'deliver', subscriptionId: 3, messages: packed });
        const reference = encodeFrame({ type: 'deliver', subscriptionId: 3, messages: plainMessages });
        // Read from plain copies: msgpackr's bytes (a Buffer) would decode bodies as Buffers.
        expect(unpackTrusted(new Uint8Array(written))).toEqual(unpackTrusted(new Uint8Array(reference)));
      }),
      { numRuns: 500, seed: 20_261_130 },
    );
  });

  it('pack the fields as msgpackr writes them in the broker key order, and unpack them back', () => {
    fc.assert(
      fc.property(fields, (message) => {
        const bytes = packDeliveredFields(message);
        const { messageId, topic, body, bornAt, tag, keys, messageGroup, properties, deadLetter } = message;
        const ordered = { messageId, topic, body, bornAt, tag, keys, messageGroup, properties, deadLetter };
        expect(toHex(bytes)).toBe(toHex(packWithMsgpackr(ordered)));
        // One fixmap of at most 9 entries: the writer adds three to its count.
        expect((bytes[0] as number) & 0xf0).toBe(0x80);
        // Written after room the caller fills, in memory the caller allocates: the same bytes.
        let allocated = 0;
        const allocate = (size: number) => {
          allocated = size;
          return new Uint8Array(size).fill(0xee);
        };
        const placed = packDeliveredFields(message, { before: 3, allocate });
        expect(allocated).toBe(3 + bytes.length);
        expect(toHex(placed.subarray(0, 3))).toBe('eeeeee');
        expect(toHex(placed.subarray(3))).toBe(toHex(bytes));
        const back = unpackDeliveredFields(bytes);
        expect({ ...back, body: new Uint8Array(back.body) }).toEqual(message);
      }),
      { numRuns: 1_000, seed: 20_261_131 },
    );
  });

  it('read like plain messages, and a copy with a changed field is written with the change', () => {
    const message: DeliveredFields = {
      messageId: '0192f5c1-7e0c-7abc-8def-0123456789ab',
      topic: 'orders',
      tag: 'paid',
      body: new Uint8Array([1, 2, 3]),
      bornAt: 1_764_460_800_000,
    };
    const packed = new PackedDelivery(message, packDeliveredFields(message), 2, 41, '1~g~orders~41~7');
    expect({ ...packed }).toStrictEqual(
      plain(message, { deliveryAttempt: 2, offset: 41, receiptHandle: '1~g~orders~41~7' }),
    );
    const moved = { ...packed, topic: 'invoices', offset: 7 };
    const decoded = decodeBrokerFrame(encodeFrame({ type: 'deliver', subscriptionId: 1, messages: [moved] }));
    expect(decoded).toMatchObject({
      ok: true,
      frame: { messages: [{ topic: 'invoices', offset: 7, tag: 'paid' }] },
    });
  });

  it('pass the clients\u2019 checks as a plain message does', () => {
    const message: DeliveredFields = {
      messageId: '0192f5c1-7e0c-7abc-8def-0123456789ab',
      topic: 'orders',
      keys: ['order-1'],
      messageGroup: 'customer-9',
      properties: { region: 'eu' },
      body: new Uint8Array(256).fill(7),
      bornAt: 1_764_460_800_000,
    };
    const packed = new PackedDelivery(message, packDeliveredFields(message), 1, 0, '1~g~orders~0~1');
    const decoded = decodeBrokerFrame(
      encodeFrame({ type: 'deliver', subscriptionId: 9, messages: [packed] }),
    );
    expect(decoded.ok).toBe(true);
    if (!decoded.ok || decoded.frame.type !== 'deliver') return;
    expect(decoded.frame.messages).toEqual([
      { ...message, deliveryAttempt: 1, offset: 0, receiptHandle: '1~g~orders~0~1' },
    ]);
  });
});
