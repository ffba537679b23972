import { seededRandom } from '@ricochet/core';
import { type BrokerFrame, type DeliveredMessage, decodeBrokerFrame, encodeFrame } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { toDeliveredMessage } from '../engine/delivered-message.js';
import type { StoredMessage } from '../store/records.js';
import { encodeBrokerFrame, encodeDeliveryFrame } from './broker-frame-encoding.js';

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;

/** Every size boundary of MessagePack's formats, for numbers, strings, bins and arrays. */
const NUMBERS = [0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x1_0000, 0xffff_ffff, 0x1_0000_0000, Date.now()];
const LENGTHS = [1, 31, 32, 85, 86, 255, 256];
const BODY_BYTES = [0, 1, 255, 256, 65_535, 65_536];

function text(random: Random, length: number): string {
  // ASCII, two-byte and three-byte UTF-8, and a surrogate pair: the header depends on bytes, not characters.
  const alphabet = ['a', 'Z', '0', '~', 'é', 'ж', '€', '😀'];
  let result = '';
  while (result.length < length) result += random() < 0.8 ? 'a' : pick(random, alphabet);
  return result.slice(0, length).replace(/[\ud800-\udbff]$/, 'x');
}

function storedMessage(random: Random): StoredMessage {
  const body = new Uint8Array(random() < 0.05 ? pick(random, BODY_BYTES) : pick(random, [0, 16, 255, 256]));
  for (let i = 0; i < Math.min(body.length, 64); i++) body[i] = Math.floor(random() * 256);
  return {
    messageId:
      random() < 0.7 ? '0192f3a4b5c6d7e8f90a1b2c3d4e5f60' : text(random, pick(random, [1, 31, 32, 128])),
    topic: random() < 0.8 ? 'orders' : `%DLQ%${'g'.repeat(pick(random, [1, 26, 27, 120]))}`,
    offset: pick(random, NUMBERS),
    ...(random() < 0.5 ? { tag: text(random, pick(random, [1, 5, 31, 32, 128])) } : {}),
    body,
    bornAt: pick(random, NUMBERS),
    storedAt: 0,
  };
}

function deliveries(random: Random, count: number): DeliveredMessage[] {
  return Array.from({ length: count }, () =>
    toDeliveredMessage(
      storedMessage(random),
      1 + pick(random, NUMBERS),
      `1~g~${text(random, pick(random, LENGTHS))}~7~1`,
    ),
  );
}

/** Where two encodings first differ (with the bytes around it), or `undefined` when they are the same. */
function firstDifference(actual: Uint8Array | undefined, expected: Uint8Array): string | undefined {
  if (actual === undefined) return 'not encoded';
  if (Buffer.from(actual).equals(Buffer.from(expected))) return undefined;
  let at = 0;
  while (at < actual.length && actual[at] === expected[at]) at++;
  const around = (bytes: Uint8Array) =>
    Buffer.from(bytes.subarray(Math.max(0, at - 8), at + 8)).toString('hex');
  return `lengths ${actual.length}/${expected.length}, first difference at ${at}: ${around(actual)} vs ${around(expected)}`;
}

describe('encodeDeliveryFrame', () => {
  it('writes the bytes the codec writes, for deliver and messages frames of every size', () => {
    const random = seededRandom(0xde11);
    for (const count of [1, 2, 15, 16, 17, 256, 300]) {
      for (let round = 0; round < 4; round++) {
        const messages = deliveries(random, count);
        const frames: BrokerFrame[] = [
          { type: 'deliver', subscriptionId: pick(random, NUMBERS), messages },
          {
            type: 'messages',
            id: pick(
              random,
              NUMBERS.filter((n) => n <= 0xffff_ffff),
            ),
            messages,
          },
        ];
        for (const frame of frames) {
          const fast = encodeDeliveryFrame(frame as Parameters<typeof encodeDeliveryFrame>[0]);
          expect(firstDifference(fast, encodeFrame(frame))).toBeUndefined();
        }
      }
    }
  });

  it('writes an empty messages frame like the codec', () => {
    const frame: BrokerFrame = { type: 'messages', id: 3, messages: [] };
    expect(firstDifference(encodeBrokerFrame(frame), encodeFrame(frame))).toBeUndefined();
  });

  it('leaves a message with more than the everyday fields to the codec, which still encodes it', () => {
    const random = seededRandom(0xf00);
    const [plain] = deliveries(random, 1);
    if (!plain) throw new Error('no message');
    for (const extra of [
      { keys: ['k'] },
      { messageGroup: 'mg' },
      { properties: { a: 'b' } },
      { deadLetter: { originTopic: 'orders', attempts: 3, reason: 'r', deadLetteredAt: 1 } },
    ]) {
      const frame = {
        type: 'deliver' as const,
        subscriptionId: 1,
        messages: [plain, { ...plain, ...extra }],
      };
      expect(encodeDeliveryFrame(frame)).toBeUndefined();
      const decoded = decodeBrokerFrame(encodeBrokerFrame(frame));
      expect(decoded.ok && decoded.frame).toEqual(frame);
    }
  });
});
