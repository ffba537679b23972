import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeFrame } from './codec.js';
import {
  DEFAULT_PEER_MAX_FRAME_BYTES,
  deliveredMessageBytes,
  deliveryFrameBudget,
  MAX_DELIVERY_FRAME_BYTES,
  splitDeliveries,
} from './delivery-frames.js';
import type { DeliveredMessage } from './schemas/message.js';

function delivered(bodyBytes: number, extra: Partial<DeliveredMessage> = {}): DeliveredMessage {
  return {
    messageId: '0123456789abcdef0123456789abcdef',
    topic: 'orders',
    body: new Uint8Array(bodyBytes),
    bornAt: 1_700_000_000_000,
    deliveryAttempt: 1,
    offset: 12,
    receiptHandle: 'r'.repeat(64),
    ...extra,
  };
}

const textArbitrary = fc.string({ unit: 'binary', maxLength: 40 });

const messageArbitrary = fc.record({
  bodyBytes: fc.integer({ min: 0, max: 4_096 }),
  properties: fc.option(fc.dictionary(textArbitrary, textArbitrary, { maxKeys: 8 }), { nil: undefined }),
  keys: fc.option(fc.array(textArbitrary, { maxLength: 4 }), { nil: undefined }),
  tag: fc.option(fc.stringMatching(/^[a-z]{1,40}$/), { nil: undefined }),
  reason: fc.option(textArbitrary, { nil: undefined }),
});

describe('deliveredMessageBytes', () => {
  it('is never below the bytes the message takes in a deliver frame', () => {
    fc.assert(
      fc.property(messageArbitrary, ({ bodyBytes, properties, keys, tag, reason }) => {
        const message = delivered(bodyBytes, {
          ...(properties === undefined ? {} : { properties }),
          ...(keys === undefined ? {} : { keys }),
          ...(tag === undefined ? {} : { tag }),
          ...(reason === undefined
            ? {}
            : {
                deadLetter: {
                  originTopic: 'orders',
                  attempts: 17,
                  reason,
                  deadLetteredAt: 1_700_000_000_000,
                },
              }),
        });
        const alone = encodeFrame({ type: 'deliver', subscriptionId: 1, messages: [message] }).byteLength;
        const empty = encodeFrame({ type: 'deliver', subscriptionId: 1, messages: [] }).byteLength;
        expect(deliveredMessageBytes(message)).toBeGreaterThanOrEqual(alone - empty);
      }),
    );
  });
});

describe('deliveryFrameBudget', () => {
  it('stays below what the peer announced, and within the cap', () => {
    expect(deliveryFrameBudget(8 * 1024 * 1024)).toBeLessThan(8 * 1024 * 1024);
    expect(deliveryFrameBudget(1024 * 1024 * 1024)).toBe(MAX_DELIVERY_FRAME_BYTES);
    expect(deliveryFrameBudget(undefined)).toBeLessThanOrEqual(DEFAULT_PEER_MAX_FRAME_BYTES);
    expect(deliveryFrameBudget(10)).toBe(1);
  });
});

describe('splitDeliveries', () => {
  it('keeps one run of small messages as the array it was given', () => {
    const messages = [delivered(10), delivered(20)];
    const runs = splitDeliveries(messages, 256, 1024 * 1024);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toBe(messages);
  });

  it('gives a message larger than the budget a run of its own', () => {
    const messages = [delivered(10), delivered(5_000_000), delivered(10)];
    const runs = splitDeliveries(messages, 256, 1024 * 1024);
    expect(runs.map((run) => run.length)).toEqual([1, 1, 1]);
  });

  it('splits in order, every run within the count and the bytes unless it is one message', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 50_000 }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 1, max: 200_000 }),
        (sizes, maxMessages, maxBytes) => {
          const messages = sizes.map((size) => delivered(size));
          const runs = splitDeliveries(messages, maxMessages, maxBytes);
          expect(runs.flat()).toEqual(messages);
          for (const run of runs) {
            expect(run.length).toBeGreaterThan(0);
            expect(run.length).toBeLessThanOrEqual(maxMessages);
            const bytes = run.reduce((sum, message) => sum + deliveredMessageBytes(message), 0);
            if (run.length > 1) expect(bytes).toBeLessThanOrEqual(maxBytes);
          }
        },
      ),
    );
  });
});
