import { encodeFrame } from '@ricochet/protocol';
import fc from 'fast-check';
import { unpack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../store/records.js';
import { decodeStoredMessage, storedValueOf } from '../../store/schema/stored-message.js';
import { storedMessage } from '../../store/schema/stored-message-arbitrary.test-support.js';
import { toDeliveredMessage } from './delivered-message.js';

const plain: StoredMessage = {
  messageId: 'm1',
  topic: 'orders',
  offset: 7,
  body: new Uint8Array([1, 2, 3]),
  bornAt: 1_000,
  storedAt: 1_005,
};

describe('toDeliveredMessage', () => {
  it('carries the sent fields, the attempt and the handle, and no absent field', () => {
    const delivered = toDeliveredMessage(plain, 2, 'handle-1');
    expect(delivered).toEqual({
      messageId: 'm1',
      topic: 'orders',
      body: new Uint8Array([1, 2, 3]),
      bornAt: 1_000,
      deliveryAttempt: 2,
      offset: 7,
      receiptHandle: 'handle-1',
    });
    // Absent stays absent: no key with an undefined value goes on the wire.
    expect(Object.keys(delivered).sort()).toEqual(
      ['body', 'bornAt', 'deliveryAttempt', 'messageId', 'offset', 'receiptHandle', 'topic'].sort(),
    );
    expect(delivered).not.toHaveProperty('storedAt');
  });

  it('carries the optional fields as copies the delivery cannot change the stored message through', () => {
    const keys = ['k1', 'k2'];
    const properties = { region: 'eu' };
    const message: StoredMessage = { ...plain, tag: 'paid', keys, messageGroup: 'order-9', properties };
    const delivered = toDeliveredMessage(message, 1, 'h');
    expect(delivered).toMatchObject({ tag: 'paid', keys: ['k1', 'k2'], messageGroup: 'order-9', properties });
    expect(delivered.keys).not.toBe(keys);
    expect(delivered.properties).not.toBe(properties);
    delivered.keys?.push('k3');
    expect(keys).toEqual(['k1', 'k2']);
  });

  it('shows a DLQ copy only the dead-letter facts clients see, not the broker-internal ones', () => {
    const message: StoredMessage = {
      ...plain,
      topic: '%DLQ%g',
      deadLetter: {
        group: 'g',
        originTopic: 'orders',
        originOffset: 3,
        attempts: 17,
        reason: 'FAILURE',
        deadLetteredAt: 2_000,
        lastLease: 17,
        redrivenAt: 3_000,
      },
    };
    expect(toDeliveredMessage(message, 1, 'h').deadLetter).toEqual({
      originTopic: 'orders',
      attempts: 17,
      reason: 'FAILURE',
      deadLetteredAt: 2_000,
    });
  });

  it('is delivered from a layout 2 record as the same message as one encoded field by field', () => {
    fc.assert(
      fc.property(storedMessage, fc.integer({ min: 1, max: 50 }), (message, attempt) => {
        const read = decodeStoredMessage(storedValueOf(message));
        const packed = toDeliveredMessage(read, attempt, 'h');
        const plain = toDeliveredMessage(message, attempt, 'h');
        expect({ ...packed, body: new Uint8Array(packed.body) }).toStrictEqual({
          ...plain,
          body: new Uint8Array(plain.body),
        });
        const frame = (delivered: typeof plain) =>
          unpack(new Uint8Array(encodeFrame({ type: 'deliver', subscriptionId: 1, messages: [delivered] })));
        expect(frame(packed)).toEqual(frame(plain));
      }),
      { numRuns: 500, seed: 20_261_132 },
    );
  });
});
