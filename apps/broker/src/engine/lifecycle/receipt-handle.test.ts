import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QUEUE_COUNT } from '../../store/postgres/queue-schema.js';
import {
  type BroadcastReceiptHandle,
  type ClusteringReceiptHandle,
  decodeLeaseHandles,
  decodeReceiptHandle,
  encodeReceiptHandle,
  groupAndTopicOfHandle,
  isBroadcastReceiptHandle,
  MAX_BROADCAST_CLIENT_ID_BYTES,
  type ReceiptHandle,
  withQueue,
} from './receipt-handle.js';

/** The clustering dialect, as the tests before the codec wrote it: address and lease apart. */
const encodeClustering = (handle: Omit<ClusteringReceiptHandle, 'kind'>) =>
  encodeReceiptHandle({ kind: 'clustering', ...handle });
const decodeClustering = (text: string) => {
  const handle = decodeReceiptHandle(text);
  if (handle?.kind !== 'clustering' || handle.queue !== undefined) return undefined;
  const { kind: _kind, ...rest } = handle;
  return rest;
};
const encodeBroadcast = (handle: Omit<BroadcastReceiptHandle, 'kind'>) =>
  encodeReceiptHandle({ kind: 'broadcast', ...handle });
const decodeBroadcast = (text: string) => {
  const handle = decodeReceiptHandle(text);
  if (handle?.kind !== 'broadcast' || handle.queue !== undefined) return undefined;
  const { kind: _kind, ...rest } = handle;
  return rest;
};

describe('the receipt-handle codec: one example of each dialect, byte for byte', () => {
  const examples: [string, ReceiptHandle][] = [
    [
      '1~billing~orders.v2~17~3',
      { kind: 'clustering', group: 'billing', topic: 'orders.v2', offset: 17, lease: 3 },
    ],
    [
      '1~ops~%DLQ%billing~0~1',
      { kind: 'clustering', group: 'ops', topic: '%DLQ%billing', offset: 0, lease: 1 },
    ],
    [
      'B~audit~d29ya2VyLTE~orders~7~3',
      { kind: 'broadcast', group: 'audit', clientId: 'worker-1', topic: 'orders', offset: 7, lease: 3 },
    ],
    [
      '1~billing~orders~17~3@5',
      { kind: 'clustering', group: 'billing', topic: 'orders', offset: 17, lease: 3, queue: 5 },
    ],
    [
      'B~audit~d29ya2VyLTE~orders~7~3@63',
      {
        kind: 'broadcast',
        group: 'audit',
        clientId: 'worker-1',
        topic: 'orders',
        offset: 7,
        lease: 3,
        queue: 63,
      },
    ],
    ['1~g~t~0~1@0', { kind: 'clustering', group: 'g', topic: 't', offset: 0, lease: 1, queue: 0 }],
  ];

  it.each(examples)('%s', (text, handle) => {
    expect(encodeReceiptHandle(handle)).toBe(text);
    expect(decodeReceiptHandle(text)).toEqual(handle);
  });

  it('marks a handle with its queue as encoding it with the queue does', () => {
    for (const [text, handle] of examples) {
      if (handle.queue !== undefined) continue;
      expect(withQueue(text, 12)).toBe(encodeReceiptHandle({ ...handle, queue: 12 }));
    }
  });

  it.each([
    '1~g~t~0~1@',
    '1~g~t~0~1@00',
    '1~g~t~0~1@05',
    '1~g~t~0~1@100',
    '1~g~t~0~1@x',
    '@1',
    '1~g~t~0~1@1@2',
  ])('refuses the queue mark of %j', (text) => {
    expect(decodeReceiptHandle(text)).toBeUndefined();
  });
});

const name = (pattern: RegExp, max: number) =>
  fc
    .string({ unit: fc.constantFrom(...'abcXYZ019_.-'), minLength: 1, maxLength: max })
    .filter((s) => pattern.test(s));
const groupName = name(/^[A-Za-z0-9_.-]{1,120}$/, 120);
const topicName = fc.oneof(
  name(/^[A-Za-z0-9_.-]{1,127}$/, 127),
  groupName.map((group) => `%DLQ%${group}`),
);
const whole = fc.nat({ max: Number.MAX_SAFE_INTEGER });
const queue = fc.option(fc.integer({ min: 0, max: QUEUE_COUNT - 1 }), { nil: undefined });
const withOptionalQueue = <T extends object>(handle: T, q: number | undefined) =>
  q === undefined ? handle : { ...handle, queue: q };
const anyHandle: fc.Arbitrary<ReceiptHandle> = fc.oneof(
  fc
    .record({
      group: groupName,
      topic: topicName,
      offset: whole,
      lease: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      q: queue,
    })
    .map(({ q, ...rest }) => withOptionalQueue({ kind: 'clustering' as const, ...rest }, q)),
  fc
    .record({
      group: groupName,
      clientId: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
      topic: topicName,
      offset: whole,
      lease: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      q: queue,
    })
    .map(({ q, ...rest }) => withOptionalQueue({ kind: 'broadcast' as const, ...rest }, q)),
);

describe('the receipt-handle codec (properties)', () => {
  it('decodes what it encodes', () => {
    fc.assert(
      fc.property(anyHandle, (handle) => {
        expect(decodeReceiptHandle(encodeReceiptHandle(handle))).toEqual(handle);
      }),
    );
  });

  it('reads the group and topic of what it encodes without decoding it', () => {
    fc.assert(
      fc.property(anyHandle, (handle) => {
        expect(groupAndTopicOfHandle(encodeReceiptHandle(handle))).toEqual({
          group: handle.group,
          topic: handle.topic,
        });
        expect(isBroadcastReceiptHandle(encodeReceiptHandle(handle))).toBe(handle.kind === 'broadcast');
      }),
    );
  });

  it('decodes garbage to undefined, never throwing', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (text) => {
        // Text that happens to be a handle is one, and spelled one way only.
        const handle = decodeReceiptHandle(text);
        if (handle !== undefined) expect(encodeReceiptHandle(handle)).toBe(text);
      }),
    );
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(...'1B~@0g.%'), maxLength: 24 }), (text) => {
        const handle = decodeReceiptHandle(text);
        if (handle !== undefined) expect(encodeReceiptHandle(handle)).toBe(text);
      }),
    );
  });

  it('refuses an encoded handle with one character changed into a separator, or cut short', () => {
    fc.assert(
      fc.property(anyHandle, fc.nat(), fc.constantFrom('~', '@', ''), (handle, at, by) => {
        const text = encodeReceiptHandle(handle);
        const i = at % text.length;
        const changed = `${text.slice(0, i)}${by}${text.slice(i + 1)}`;
        const decoded = decodeReceiptHandle(changed);
        if (decoded !== undefined) expect(encodeReceiptHandle(decoded)).toBe(changed);
        expect(decodeReceiptHandle(text.slice(0, i))).not.toEqual(handle);
      }),
    );
  });
});

describe('receipt handles', () => {
  it('round-trip, DLQ topics included', () => {
    for (const handle of [
      { group: 'billing', topic: 'orders.v2', offset: 0, lease: 1 },
      { group: 'ops', topic: '%DLQ%billing', offset: 123_456_789, lease: 42 },
    ]) {
      expect(decodeClustering(encodeClustering(handle))).toEqual(handle);
    }
  });

  it.each([
    '',
    'x',
    '1~g~t~0',
    '2~g~t~0~1',
    '1~g~t~-1~1',
    '1~g~t~0~0',
    '1~g~t~01~1',
    '1~g h~t~0~1',
    '1~g~%X%t~0~1',
    '1~g~t~0~1.5',
    '1~g~t~0~1~2',
    '1~~t~0~1',
    '1~g~t~~1',
    '1~g~t~0~',
    '1~g~t~99999999999999999~1',
    '1~g~t~9007199254740993~1',
  ])('rejects %j', (text) => {
    expect(decodeClustering(text)).toBeUndefined();
  });
});

describe('broadcast receipt handles (B1)', () => {
  it('round-trip any clientId, separators and non-ASCII text included, and never pass as a plain handle', () => {
    for (const clientId of ['worker-1', 'host~7/pid 42', 'zürich-αβ']) {
      const handle = { group: 'audit', clientId, topic: 'orders', offset: 7, lease: 3 };
      const text = encodeBroadcast(handle);
      expect(isBroadcastReceiptHandle(text)).toBe(true);
      expect(decodeBroadcast(text)).toEqual(handle);
      expect(decodeClustering(text)).toBeUndefined();
    }
  });

  it('stays within the protocol limit of 512 characters for the longest names an instance may have, tagged with the last queue', () => {
    for (const clientId of [
      'é'.repeat(Math.floor(MAX_BROADCAST_CLIENT_ID_BYTES / 2)),
      'a'.repeat(MAX_BROADCAST_CLIENT_ID_BYTES),
      '😀'.repeat(Math.floor(MAX_BROADCAST_CLIENT_ID_BYTES / 4)),
    ]) {
      const handle = {
        group: 'g'.repeat(120),
        clientId,
        topic: `%DLQ%${'t'.repeat(120)}`,
        offset: Number.MAX_SAFE_INTEGER,
        lease: Number.MAX_SAFE_INTEGER,
      };
      expect(
        encodeReceiptHandle({ kind: 'broadcast', ...handle, queue: QUEUE_COUNT - 1 }).length,
      ).toBeLessThanOrEqual(512);
    }
  });

  it.each([
    'B~audit~~orders~7~3',
    'B~audit~d29ya2VyLTE~orders~7',
    'B~audit~!!~orders~7~3',
    '1~audit~orders~7~3',
  ])('refuses %s', (text) => {
    expect(decodeBroadcast(text)).toBeUndefined();
  });
});

describe('groupAndTopicOfHandle', () => {
  it('reads the group and topic of both kinds of handle as the decoders do', () => {
    const plain = { group: 'billing', topic: '%DLQ%billing', offset: 12, lease: 3 };
    const broadcast = { group: 'audit', topic: 'orders', offset: 7, lease: 1, clientId: 'audit~1 é' };
    expect(groupAndTopicOfHandle(encodeClustering(plain))).toEqual({
      group: 'billing',
      topic: '%DLQ%billing',
    });
    expect(groupAndTopicOfHandle(encodeBroadcast(broadcast))).toEqual({
      group: 'audit',
      topic: 'orders',
    });
  });

  it.each(['', 'x', '2~g~t~0~1', '1~g', '1~g~t', 'B~g~Yw', 'B~g~Yw~t'])('finds no names in %j', (text) => {
    expect(groupAndTopicOfHandle(text)).toBeUndefined();
  });
});

describe('decodeLeaseHandles (a settle frame decoded once, issue 43)', () => {
  /** What the full decoder says of each handle, in the shape the batch decoder gives it. */
  const oneByOne = (texts: readonly string[]) =>
    texts.map((text) => {
      const handle = decodeReceiptHandle(text);
      return handle?.kind === 'clustering' && handle.queue === undefined
        ? { group: handle.group, topic: handle.topic, offset: handle.offset, lease: handle.lease }
        : undefined;
    });
  const batch = (texts: readonly string[]) => {
    const decoded = decodeLeaseHandles(texts.map((receiptHandle) => ({ receiptHandle })));
    return texts.map((_, i) => {
      const name = decoded.names[decoded.nameIndex[i] as number];
      return name && { ...name, offset: decoded.offsets[i], lease: decoded.leases[i] };
    });
  };

  it('decodes each handle as the full decoder does, near-misses of the shared prefix included', () => {
    const own = (offset: number, lease = 1, group = 'g', topic = 't') =>
      encodeClustering({ group, topic, offset, lease });
    const texts = [
      own(0),
      own(1),
      own(2, 3),
      `${own(3)}@2`,
      `${own(4)}@x`,
      `${own(5)}~6`,
      '1~g~t~05~1',
      '1~g~t~5~0',
      '1~g~t~~1',
      '1~g~t~5~',
      '1~g~t~9007199254740993~1',
      own(6, 1, 'g', 'u'),
      own(7),
      'B~g~YQ~t~8~1',
      own(9, 1, 'g2'),
      own(10),
      'garbage',
      own(11),
    ];
    expect(batch(texts)).toEqual(oneByOne(texts));
  });

  it('agrees with the full decoder on any frame of handles', () => {
    const handle = fc.oneof(
      fc
        .record({
          group: fc.constantFrom('g', 'g2'),
          topic: fc.constantFrom('t', 'u'),
          offset: fc.integer({ min: 0, max: 1_000 }),
          lease: fc.integer({ min: 1, max: 9 }),
        })
        .map((fields) => encodeClustering(fields)),
      fc.string({ maxLength: 20 }).map((tail) => `1~g~t~${tail}`),
      fc.string({ maxLength: 20 }),
    );
    fc.assert(
      fc.property(fc.array(handle, { maxLength: 40 }), (texts) => {
        expect(batch(texts)).toEqual(oneByOne(texts));
      }),
      { numRuns: 300 },
    );
  });
});
