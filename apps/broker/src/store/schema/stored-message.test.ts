import { unpackDeliveredFields } from '@ricochet/protocol';
import fc from 'fast-check';
import { pack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../records.js';
import {
  decodeStoredMessage,
  deliveredDeadLetter,
  isStoredMessageRecord,
  PackedStoredMessage,
  packStoredMessage,
  storedValueOf,
} from './stored-message.js';
import { storedMessage } from './stored-message-arbitrary.test-support.js';

/** A read message as plain data: its own fields, its body a plain byte array. */
const plainOf = (message: StoredMessage) => ({ ...message, body: new Uint8Array(message.body) });

describe('a layout 2 message record', () => {
  it('reads back every field of the message it was written from, with or without its topic known', () => {
    fc.assert(
      fc.property(storedMessage, fc.boolean(), (message, topicKnown) => {
        const value = storedValueOf(message);
        expect(isStoredMessageRecord(value)).toBe(true);
        const read = decodeStoredMessage(value, topicKnown ? message.topic : undefined);
        expect(plainOf(read)).toStrictEqual(plainOf(message));
        // Read back, the message is stored as the same value again, not encoded anew.
        expect(storedValueOf(read)).toBe(value);
      }),
      { numRuns: 1_000, seed: 20_261_130 },
    );
  });

  it('is made once with its message: the message as made reads as the message it was made from', () => {
    fc.assert(
      fc.property(storedMessage, (message) => {
        const packed = packStoredMessage(message);
        expect(plainOf(packed)).toStrictEqual(plainOf(message));
        expect(PackedStoredMessage.deliveredFieldsOf(packed)).toStrictEqual(
          PackedStoredMessage.deliveredFieldsOf(decodeStoredMessage(PackedStoredMessage.valueOf(packed))),
        );
      }),
      { numRuns: 500, seed: 20_261_134 },
    );
  });

  it('ends with the delivered fields, a MessagePack map a delivery copies whole', () => {
    fc.assert(
      fc.property(storedMessage, (message) => {
        const bytes = PackedStoredMessage.deliveredBytesOf(decodeStoredMessage(storedValueOf(message)));
        const { offset: _offset, storedAt: _storedAt, deliverAt: _deliverAt, deadLetter, ...sent } = message;
        const delivered =
          deadLetter === undefined ? sent : { ...sent, deadLetter: deliveredDeadLetter(deadLetter) };
        const fields = unpackDeliveredFields(bytes);
        expect({ ...fields, body: new Uint8Array(fields.body) }).toStrictEqual({
          ...delivered,
          body: new Uint8Array(message.body),
        });
      }),
      { numRuns: 500, seed: 20_261_131 },
    );
  });

  it('is told from a stored message of layout 1, a MessagePack map', () => {
    fc.assert(
      fc.property(storedMessage, (message) => {
        expect(isStoredMessageRecord(pack(message))).toBe(false);
      }),
      { numRuns: 200, seed: 20_261_135 },
    );
  });
});
