import { seededRandom } from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import { decodeBrokerFrame, decodeClientFrame, decodeFrame, encodeFrame } from './codec.js';
import { hotBrokerFrame, hotClientFrame, hotOutgoingMessage } from './hot-frames.js';
import { brokerFrameSchema, clientFrameSchema, type Frame } from './schemas/frames.js';
import { outgoingMessageSchema } from './schemas/message.js';

type Value = unknown;

/**
 * What msgpackr decodes MessagePack `bin` to in Node: a `Buffer`, a subclass of `Uint8Array`. The
 * protocol's tests run without Node's types, so a subclass of their own stands in for it.
 */
class BufferLike extends Uint8Array {}
type Random = () => number;

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
const NAME_CHARS = 'abcXYZ019_.-';
const name = (random: Random, max = 12): string =>
  Array.from({ length: 1 + Math.floor(random() * max) }, () => pick(random, [...NAME_CHARS])).join('');
const bytes = (random: Random): Uint8Array => {
  const body = new BufferLike(Math.floor(random() * 40));
  for (let i = 0; i < body.length; i++) body[i] = Math.floor(random() * 256);
  return random() < 0.5 ? body : new Uint8Array(body);
};
const whole = (random: Random, max: number): number => pick(random, [0, 1, max, Math.floor(random() * max)]);

function outgoingMessage(random: Random): Record<string, Value> {
  return {
    messageId: name(random, 40),
    topic: name(random),
    ...(random() < 0.5 ? { tag: pick(random, ['a', 'TagA', 'x:y', 'é']) } : {}),
    body: bytes(random),
    bornAt: whole(random, Number.MAX_SAFE_INTEGER),
  };
}

function deliveredMessage(random: Random): Record<string, Value> {
  return {
    messageId: name(random, 40),
    topic: random() < 0.2 ? `%DLQ%${name(random)}` : name(random),
    ...(random() < 0.5 ? { tag: pick(random, ['a', 'TagA']) } : {}),
    body: bytes(random),
    bornAt: whole(random, Number.MAX_SAFE_INTEGER),
    deliveryAttempt: 1 + whole(random, 20),
    offset: whole(random, Number.MAX_SAFE_INTEGER),
    receiptHandle: `1~${name(random)}~${name(random)}~${whole(random, 1e9)}~${1 + whole(random, 9)}`,
  };
}

const some = <T>(random: Random, make: (random: Random) => T, max: number): T[] =>
  Array.from({ length: 1 + Math.floor(random() * max) }, () => make(random));

/** Valid frames in the everyday shape the hot checks are for. */
const CLIENT_FRAMES: Record<string, (random: Random) => Record<string, Value>> = {
  send: (random) => ({
    type: 'send',
    id: whole(random, 0xffff_ffff),
    messages: some(random, outgoingMessage, 5),
  }),
  ack: (random) => ({
    type: 'ack',
    id: whole(random, 0xffff_ffff),
    receiptHandles: some(random, (r) => `1~g~t~${whole(r, 1e6)}~1`, 5),
  }),
  nack: (random) => ({
    type: 'nack',
    id: whole(random, 0xffff_ffff),
    items: some(
      random,
      (r) => ({
        receiptHandle: `1~g~t~${whole(r, 1e6)}~1`,
        ...(r() < 0.7 ? { reason: pick(r, ['boom', '', 'é', 'x'.repeat(1_024)]) } : {}),
        ...(r() < 0.2
          ? { retryAfterMs: whole(r, 24 * 60 * 60 * 1_000) }
          : r() < 0.1
            ? { deadLetter: true }
            : {}),
      }),
      5,
    ),
  }),
  credit: (random) => ({
    type: 'credit',
    subscriptionId: whole(random, 1e6),
    credits: 1 + whole(random, 65_535),
  }),
  receive: (random) => ({
    type: 'receive',
    id: whole(random, 0xffff_ffff),
    group: name(random, 20),
    subscriptions: Object.fromEntries(
      some(
        random,
        (r) => [
          r() < 0.2 ? `%DLQ%${name(r)}` : name(r),
          pick(r, ['*', 'TagA', 'a || b', 'x:y', 'é', '  TagB ']),
        ],
        4,
      ),
    ),
    maxMessages: 1 + whole(random, 31),
    invisibleDurationMs: pick(random, [10, 30_000, 43_200_000]),
    awaitDurationMs: whole(random, 30_000),
  }),
};
const BROKER_FRAMES: Record<string, (random: Random) => Record<string, Value>> = {
  deliver: (random) => ({
    type: 'deliver',
    subscriptionId: whole(random, 1e6),
    messages: some(random, deliveredMessage, 5),
  }),
  messages: (random) => ({
    type: 'messages',
    id: whole(random, 0xffff_ffff),
    messages: random() < 0.1 ? [] : some(random, deliveredMessage, 5),
  }),
  sendResult: (random) => ({
    type: 'sendResult',
    id: whole(random, 0xffff_ffff),
    receipts: some(
      random,
      (r) => ({ ok: true, messageId: name(r, 40), offset: whole(r, 1e9), duplicate: r() < 0.1 }),
      4,
    ),
  }),
  settled: (random) => ({ type: 'settled', id: whole(random, 0xffff_ffff), failures: [] }),
};

/** Values a damaged field may take: wrong types, edges just outside the ranges, unknown shapes. */
const ODD_VALUES: readonly Value[] = [
  null,
  undefined,
  -1,
  -0,
  0,
  1.5,
  65_537,
  0x1_0000_0000,
  2 ** 53,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  '',
  'a'.repeat(129),
  'x'.repeat(513),
  'x'.repeat(1_025),
  'bad name!',
  '%DLQ%',
  '%DLQ%g',
  '*',
  'a|b',
  true,
  false,
  {},
  [],
  [1],
  new Uint8Array(1),
  BufferLike.of(0x78),
  new Date(0),
];

/** A fresh odd value: shared instances could end up inside themselves. */
const odd = (random: Random): Value => copy(pick(random, ODD_VALUES));

/** One local damage: a field replaced, removed or added, anywhere in the frame. */
function damage(random: Random, frame: Record<string, Value>): void {
  const containers: Record<string, Value>[] | Value[][] = [];
  const collect = (value: Value): void => {
    if (Array.isArray(value)) {
      (containers as Value[][]).push(value);
      for (const item of value) collect(item);
    } else if (typeof value === 'object' && value !== null && !(value instanceof Uint8Array)) {
      (containers as Record<string, Value>[]).push(value as Record<string, Value>);
      for (const item of Object.values(value)) collect(item);
    }
  };
  collect(frame);
  const target = pick(random, containers as Value[]) as Record<string, Value> | Value[];
  if (Array.isArray(target)) {
    const choice = random();
    if (choice < 0.3) target.length = 0;
    else if (choice < 0.6) target.push(odd(random));
    else if (target.length > 0) target[Math.floor(random() * target.length)] = odd(random);
    return;
  }
  const keys = Object.keys(target);
  const choice = random();
  if (choice < 0.2)
    target[
      pick(random, ['extra', 'keys', 'properties', 'delayMs', 'deadLetter', 'messageGroup', 'retryAfterMs'])
    ] = pick(random, ODD_VALUES);
  else if (choice < 0.35 && keys.length > 0) delete target[pick(random, keys)];
  else if (keys.length > 0) target[pick(random, keys)] = odd(random);
}

/** A deep copy keeping Buffers Buffers (structuredClone would make them plain Uint8Arrays). */
function copy(value: Value): Value {
  if (value instanceof BufferLike) return BufferLike.from(value);
  if (value instanceof Uint8Array) return new Uint8Array(value);
  if (value instanceof Date) return new Date(value.getTime());
  if (Array.isArray(value)) return value.map(copy);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, copy(item)]));
  }
  return value;
}

const SIDES = [
  { side: 'client', frames: CLIENT_FRAMES, hot: hotClientFrame, schema: clientFrameSchema },
  { side: 'broker', frames: BROKER_FRAMES, hot: hotBrokerFrame, schema: brokerFrameSchema },
] as const;
const CASES_PER_TYPE = 600;
/** CPU-bound (zod on every case): its own budget, many times the idle run, for a loaded machine. */
const BUDGET_MS = 60_000;

describe('hot frame checks', () => {
  it.each(SIDES)(
    '$side: accept every everyday frame, with exactly the frame zod returns',
    ({ frames, hot, schema }) => {
      const random = seededRandom(0x407);
      for (const make of Object.values(frames)) {
        for (let i = 0; i < CASES_PER_TYPE; i++) {
          const frame = make(random);
          const expected = schema.safeParse(copy(frame));
          expect(expected.success).toBe(true);
          const fast = hot(copy(frame) as Record<string, Value>);
          expect(fast).toEqual(expected.data);
          for (const message of (fast as { messages?: { body: Uint8Array }[] }).messages ?? []) {
            expect(message.body.constructor).toBe(Uint8Array);
          }
        }
      }
    },
  );

  it.each(SIDES)(
    '$side: never accept a damaged frame zod refuses or would change',
    ({ frames, hot, schema }) => {
      const random = seededRandom(0xbad);
      let refusedByZod = 0;
      let acceptedByHot = 0;
      for (const make of Object.values(frames)) {
        for (let i = 0; i < CASES_PER_TYPE; i++) {
          const frame = make(random);
          for (let d = 1 + Math.floor(random() * 2); d > 0; d--) damage(random, frame);
          const expected = schema.safeParse(copy(frame));
          if (!expected.success) refusedByZod++;
          const fast = hot(copy(frame) as Record<string, Value>);
          if (fast === undefined) continue;
          acceptedByHot++;
          expect(expected.success, JSON.stringify(frame)).toBe(true);
          expect(fast).toEqual(expected.data);
        }
      }
      // The damage must be real and varied: most frames refused, some still acceptable.
      expect(refusedByZod).toBeGreaterThan(CASES_PER_TYPE);
      expect(acceptedByHot).toBeGreaterThan(0);
    },
  );

  it('leave every other frame type to zod', () => {
    expect(hotClientFrame({ type: 'hello', protocolVersion: 1 })).toBeUndefined();
    // A dead-lettered item with a delay: zod's refinement refuses it, so the hot check must too.
    const deadAndDelayed = { receiptHandle: 'h', deadLetter: true, retryAfterMs: 5 };
    expect(clientFrameSchema.safeParse({ type: 'nack', id: 1, items: [deadAndDelayed] }).success).toBe(false);
    expect(hotClientFrame({ type: 'nack', id: 1, items: [deadAndDelayed] })).toBeUndefined();
    // A nack forwarded by another broker carries `onBehalfOf`: zod's.
    expect(
      hotClientFrame({
        type: 'nack',
        id: 1,
        items: [{ receiptHandle: 'h' }],
        onBehalfOf: { consumerId: 'c' },
      }),
    ).toBeUndefined();
    // A receive forwarded by another broker carries `onBehalfOf`: zod's.
    const receive = { type: 'receive', id: 1, group: 'g', subscriptions: { t: '*' }, maxMessages: 1 };
    const timing = { invisibleDurationMs: 10, awaitDurationMs: 0 };
    expect(hotClientFrame({ ...receive, ...timing, onBehalfOf: { consumerId: 'c' } })).toBeUndefined();
    expect(
      hotBrokerFrame({ type: 'settled', id: 1, failures: [{ index: 0, code: 404, message: 'gone' }] }),
    ).toBeUndefined();
    expect(hotBrokerFrame({ type: 'welcome', protocolVersion: 1 })).toBeUndefined();
  });
});

describe('hotOutgoingMessage, for front doors that build messages themselves', () => {
  it('accepts an everyday message as exactly what zod returns, and never one zod refuses or would change', () => {
    const random = seededRandom(0x5e4d);
    let accepted = 0;
    let refusedByZod = 0;
    for (let i = 0; i < CASES_PER_TYPE; i++) {
      const message = outgoingMessage(random) as Record<string, Value>;
      const expected = outgoingMessageSchema.safeParse(copy(message));
      expect(expected.success).toBe(true);
      expect(hotOutgoingMessage(copy(message))).toEqual(expected.data);
      const candidate = copy(message) as Record<string, Value>;
      damage(random, candidate);
      const verdict = outgoingMessageSchema.safeParse(copy(candidate));
      if (!verdict.success) refusedByZod++;
      const fast = hotOutgoingMessage(copy(candidate));
      if (fast === undefined) continue;
      accepted++;
      expect(verdict.success, JSON.stringify(candidate)).toBe(true);
      expect(fast).toEqual(verdict.data);
      expect(fast.body.constructor).toBe(Uint8Array);
    }
    expect(refusedByZod).toBeGreaterThan(0);
    expect(accepted).toBeGreaterThan(0);
  });
});

describe('the codec with hot checks', () => {
  it(
    'decodes what it encodes exactly as the schema-only decoder does',
    () => {
      const random = seededRandom(0xc0de);
      for (const { frames, side } of SIDES) {
        for (const make of Object.values(frames)) {
          for (let i = 0; i < 200; i++) {
            const bytesOnWire = encodeFrame(make(random) as Frame);
            const viaSchema = decodeFrame(bytesOnWire);
            const viaHot =
              side === 'client' ? decodeClientFrame(bytesOnWire) : decodeBrokerFrame(bytesOnWire);
            expect(viaHot).toEqual(viaSchema);
          }
        }
      }
    },
    BUDGET_MS,
  );

  it('still answers a bad hot-type frame with the schema error', () => {
    const decoded = decodeClientFrame(
      encodeFrame({ type: 'ack', id: 7, receiptHandles: [] } as unknown as Frame),
    );
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) {
      expect(decoded.error).toMatchObject({ code: 400, id: 7, frameType: 'ack' });
      expect(decoded.error.message).toMatch(/receiptHandles/);
    }
  });
});
