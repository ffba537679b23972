import { encodeFrame, type Frame } from '@ricochet/protocol';

/**
 * Hostile input for the broker (issue 10, item 6): malformed, truncated, bit-flipped and wrongly
 * typed frames from a seeded generator, so a failure can be replayed. None of them may create a
 * topic or a group, even by chance: every topic and group name in them starts with three
 * characters no name may hold, and a frame is flipped in one bit only, which can fix at most one.
 */

/** The kinds of garbage, in turn. */
export const GARBAGE_KINDS = [
  'random',
  'truncated',
  'bitFlipped',
  'wronglyTyped',
  'text',
  'deeplyNested',
] as const;
export type GarbageKind = (typeof GARBAGE_KINDS)[number];

/** Never a valid topic or group name, and no single bit flip makes it one. */
const BAD_NAME = '!?#garbage';
const BAD_HANDLE = 'not-a-receipt-handle';

/** Frames as a client might send them, but naming only names no broker accepts. */
const BASE_FRAMES: readonly Record<string, unknown>[] = [
  {
    type: 'send',
    id: 11,
    messages: [
      { messageId: 'garbage-message-id-0001', topic: BAD_NAME, body: new Uint8Array([1, 2, 3]), bornAt: 1 },
    ],
  },
  {
    type: 'receive',
    id: 12,
    group: BAD_NAME,
    subscriptions: { [BAD_NAME]: '*' },
    maxMessages: 4,
    invisibleDurationMs: 30_000,
    awaitDurationMs: 0,
  },
  { type: 'subscribe', id: 13, group: BAD_NAME, subscriptions: { [BAD_NAME]: '*' }, maxCachedMessages: 8 },
  { type: 'register', id: 14, group: BAD_NAME, subscriptions: { [BAD_NAME]: '*' } },
  { type: 'ack', id: 15, receiptHandles: [BAD_HANDLE] },
  { type: 'nack', id: 16, items: [{ receiptHandle: BAD_HANDLE, delayMs: 10 }] },
  { type: 'release', id: 17, receiptHandles: [BAD_HANDLE] },
  { type: 'changeInvisibleDuration', id: 18, receiptHandle: BAD_HANDLE, invisibleDurationMs: 20_000 },
  { type: 'unsubscribe', id: 19, subscriptionId: 987_654 },
];

/** Right field names, wrong types or shapes. */
const WRONGLY_TYPED: readonly unknown[] = [
  { type: 'send', id: 1, messages: 'not a list' },
  { type: 'send', id: 2, messages: [{ messageId: 5, topic: BAD_NAME, body: 'text', bornAt: 'now' }] },
  { type: 'send', id: -1, messages: [] },
  { type: 'receive', id: 3, group: 42, subscriptions: [], maxMessages: '4', invisibleDurationMs: null },
  {
    type: 'receive',
    id: 4,
    group: BAD_NAME,
    subscriptions: { [BAD_NAME]: 7 },
    maxMessages: 1e9,
    invisibleDurationMs: -5,
    awaitDurationMs: 1e12,
  },
  { type: 'subscribe', id: 5, group: [BAD_NAME], subscriptions: BAD_NAME, maxCachedMessages: 0 },
  { type: 'ack', id: 6, receiptHandles: [1, 2, 3] },
  { type: 'credit', subscriptionId: 'x', credits: -1 },
  { type: 'hello', protocolVersion: 'one' },
  { type: 7, id: 7 },
  { type: 'noSuchFrame', id: 8 },
  { id: 9 },
  [1, 2, 3],
  'a string',
  12345,
  null,
  true,
  {
    type: 'send',
    id: 2 ** 53,
    messages: [{ messageId: 'x'.repeat(5_000), topic: BAD_NAME, body: new Uint8Array(1), bornAt: 1 }],
  },
];

const ENCODED_BASES = BASE_FRAMES.map((frame) => encodeFrame(frame as unknown as Frame));
// The codec packs whatever it is given; the broker's decoder is what must refuse these.
const ENCODED_WRONG = WRONGLY_TYPED.map((value) => encodeFrame(value as Frame));

/** The `index`-th garbage message: bytes, or a string for a text message. */
export function garbageFrame(index: number, random: () => number): Uint8Array | string {
  const kind = GARBAGE_KINDS[index % GARBAGE_KINDS.length] as GarbageKind;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  switch (kind) {
    case 'random': {
      const bytes = new Uint8Array(Math.floor(random() * 96));
      for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
      return bytes;
    }
    case 'truncated': {
      const whole = pick(ENCODED_BASES);
      return whole.slice(0, Math.floor(random() * whole.length));
    }
    case 'bitFlipped': {
      const flipped = pick(ENCODED_BASES).slice();
      const bit = Math.floor(random() * flipped.length * 8);
      flipped[bit >> 3] = (flipped[bit >> 3] as number) ^ (1 << (bit & 7));
      return flipped;
    }
    case 'wronglyTyped':
      return pick(ENCODED_WRONG);
    case 'text':
      return JSON.stringify(pick(BASE_FRAMES), (_key, value) =>
        value instanceof Uint8Array ? [...value] : value,
      );
    case 'deeplyNested': {
      // Arrays inside arrays, thousands deep, alone or as the value of `type` in a map: a
      // recursive decoder would run out of stack.
      const depth = 1_000 + Math.floor(random() * 9_000);
      const inMap = random() < 0.5;
      const prefix = inMap ? [0x81, 0xa4, 0x74, 0x79, 0x70, 0x65] : []; // { type: …
      const bytes = new Uint8Array(prefix.length + depth + 1).fill(0x91);
      bytes.set(prefix);
      bytes[bytes.length - 1] = 0xc0;
      return bytes;
    }
  }
}
