import { unpackDeliveredFields } from '@ricochet/protocol';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../records.js';
import {
  decodeStoredMessage,
  deliveredDeadLetter,
  encodeStoredMessage,
  PackedStoredMessage,
  RECORD_FORMAT,
} from './stored-message.js';
import { storedMessage } from './stored-message-arbitrary.test-support.js';

/** A read message as plain data: its own fields, its body a plain byte array. */
const plainOf = (message: StoredMessage) => ({ ...message, body: new Uint8Array(message.body) });

describe('a layout 2 message record', () => {
  it('reads back every field of the message it was written from', () => {
    fc.assert(
      fc.property(storedMessage, (message) => {
        const record = encodeStoredMessage(message);
        expect(record[0]).toBe(RECORD_FORMAT);
        expect(plainOf(decodeStoredMessage(record, message.topic, message.offset))).toStrictEqual(
          plainOf(message),
        );
      }),
      { numRuns: 1_000, seed: 20_261_130 },
    );
  });

  it('ends with the delivered fields, a MessagePack map a delivery copies whole', () => {
    fc.assert(
      fc.property(storedMessage, (message) => {
        const decoded = decodeStoredMessage(encodeStoredMessage(message), message.topic, message.offset);
        const { bytes } = PackedStoredMessage.deliveredOf(decoded);
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
});
