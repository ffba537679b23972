import { describe, expect, it } from 'vitest';
import { decodeBrokerFrame, decodeClientFrame, decodeFrame, encodeFrame } from './codec.js';
import { fromHex, toHex } from './hex.js';
import type { Frame } from './schemas/frames.js';

const messageId = '019aa6b1f2c07d3e8a41b5c6d7e8f901';

function decodeError(bytes: Uint8Array) {
  const result = decodeFrame(bytes);
  if (result.ok) throw new Error(`expected a decode error, got ${JSON.stringify(result.frame)}`);
  return result.error;
}

describe('encodeFrame', () => {
  it('writes standard MessagePack: a fixmap with str keys, no extension types', () => {
    const hex = toHex(encodeFrame({ type: 'ok', id: 3 }));
    // 0x82 fixmap(2), 0xa4 "type", 0xa2 "ok", 0xa2 "id", 0x03
    expect(hex).toBe('82a474797065a26f6ba26964' + '03');
  });

  it('omits undefined fields instead of writing nil or an extension', () => {
    const frame = { type: 'ok', id: 3, extra: undefined } as unknown as Frame;
    expect(toHex(encodeFrame(frame))).toBe(toHex(encodeFrame({ type: 'ok', id: 3 })));
  });

  it('writes bodies as bin', () => {
    const bytes = encodeFrame({
      type: 'send',
      id: 1,
      messages: [{ messageId, topic: 't', body: new Uint8Array([1, 2, 3]), bornAt: 0 }],
    });
    expect(toHex(bytes)).toContain('c403010203');
  });

  it('packs a value that is no frame at all, as tests of hostile input ask it to', () => {
    expect(toHex(encodeFrame(null as unknown as Frame))).toBe('c0');
    expect(toHex(encodeFrame(7 as unknown as Frame))).toBe('07');
  });
});

describe('decodeFrame', () => {
  it('returns plain Uint8Array bodies, not Buffers', () => {
    const result = decodeFrame(
      encodeFrame({
        type: 'send',
        id: 1,
        messages: [{ messageId, topic: 't', body: new Uint8Array([9]), bornAt: 0 }],
      }),
    );
    expect(result.ok && result.frame.type === 'send' && result.frame.messages[0]?.body.constructor).toBe(
      Uint8Array,
    );
  });

  it('drops unknown fields so that newer peers can add optional ones', () => {
    const result = decodeFrame(encodeFrame({ type: 'ok', id: 3, futureField: 'x' } as unknown as Frame));
    expect(result).toEqual({ ok: true, frame: { type: 'ok', id: 3 } });
  });

  it('reports bytes that are not MessagePack as 400', () => {
    const error = decodeError(fromHex('c1'));
    expect(error.code).toBe(400);
    expect(error.message).toBe('a frame is a MessagePack map');
  });

  it('reports truncated MessagePack as 400', () => {
    const full = encodeFrame({ type: 'ok', id: 3 });
    expect(decodeError(full.subarray(0, full.length - 2)).message).toMatch(/^not a MessagePack value/);
  });

  it('reports trailing bytes after the map as 400', () => {
    const full = encodeFrame({ type: 'ok', id: 3 });
    const padded = new Uint8Array([...full, 0x01]);
    expect(decodeError(padded).code).toBe(400);
  });

  it('reports empty input', () => {
    expect(decodeError(new Uint8Array()).message).toBe('a frame is one non-empty MessagePack map');
  });

  it.each([
    ['an array', '9101'],
    ['a string', 'a161'],
    ['a number', '2a'],
    ['nil', 'c0'],
    ['bin', 'c40101'],
    ['a timestamp extension', 'd6ff00000001'],
  ])('reports %s at the top level', (_, hex) => {
    expect(decodeError(fromHex(hex)).message).toBe('a frame is a MessagePack map');
  });

  it('names the request id and frame type of an invalid request so the broker can answer it', () => {
    const error = decodeError(encodeFrame({ type: 'ack', id: 77, receiptHandles: [] } as unknown as Frame));
    expect(error).toMatchObject({ code: 400, id: 77, frameType: 'ack' });
    expect(error.message).toBe('invalid frame: receiptHandles: Too small: expected array to have >=1 items');
    expect(error.issues[0]?.path).toEqual(['receiptHandles']);
  });

  it('does not echo an id that is not a valid request id', () => {
    const error = decodeError(encodeFrame({ type: 'ack', id: -1, receiptHandles: [] } as unknown as Frame));
    expect(error.id).toBeUndefined();
  });

  it('rejects an unknown frame type', () => {
    const error = decodeError(encodeFrame({ type: 'teleport', id: 1 } as unknown as Frame));
    expect(error.frameType).toBe('teleport');
    expect(error.issues[0]?.path).toEqual(['type']);
  });

  it('rejects wrong field types', () => {
    const error = decodeError(
      encodeFrame({
        type: 'send',
        id: 1,
        messages: [{ messageId, topic: 't', body: 'not bytes', bornAt: 0 }],
      } as unknown as Frame),
    );
    expect(error.issues[0]?.path).toEqual(['messages', 0, 'body']);
  });

  it('rejects a message group of 64 UTF-8 bytes or more', () => {
    const frame = (messageGroup: string) =>
      encodeFrame({
        type: 'send',
        id: 1,
        messages: [{ messageId, topic: 't', messageGroup, body: new Uint8Array(), bornAt: 0 }],
      });
    expect(decodeFrame(frame('g'.repeat(63))).ok).toBe(true);
    expect(decodeFrame(frame('g'.repeat(64))).ok).toBe(false);
    expect(decodeFrame(frame('é'.repeat(32))).ok).toBe(false);
  });

  it('rejects a send naming two delays', () => {
    const error = decodeError(
      encodeFrame({
        type: 'send',
        id: 1,
        messages: [{ messageId, topic: 't', body: new Uint8Array(), bornAt: 0, delayMs: 5, delayLevel: 2 }],
      }),
    );
    expect(error.message).toContain('give at most one of deliverAt, delayMs and delayLevel');
  });

  it('rejects sends to reserved topics but allows subscribing to a DLQ', () => {
    const send = encodeFrame({
      type: 'send',
      id: 1,
      messages: [{ messageId, topic: '%DLQ%billing', body: new Uint8Array(), bornAt: 0 }],
    });
    expect(decodeFrame(send).ok).toBe(false);
    const receive = encodeFrame({
      type: 'receive',
      id: 2,
      group: 'ops',
      subscriptions: { '%DLQ%billing': '*' },
      maxMessages: 1,
      invisibleDurationMs: 10,
      awaitDurationMs: 0,
    });
    expect(decodeFrame(receive).ok).toBe(true);
  });

  it('bounds receive by S2: 1–32 messages, 10 ms – 12 h invisibility', () => {
    const receive = (maxMessages: number, invisibleDurationMs: number) =>
      decodeFrame(
        encodeFrame({
          type: 'receive',
          id: 2,
          group: 'g',
          subscriptions: { t: '*' },
          maxMessages,
          invisibleDurationMs,
          awaitDurationMs: 0,
        }),
      ).ok;
    expect(receive(32, 10)).toBe(true);
    expect(receive(33, 10)).toBe(false);
    expect(receive(1, 9)).toBe(false);
    expect(receive(1, 12 * 3_600_000)).toBe(true);
    expect(receive(1, 12 * 3_600_000 + 1)).toBe(false);
  });

  it('rejects a bad tag expression', () => {
    const subscribe = encodeFrame({
      type: 'subscribe',
      id: 1,
      group: 'g',
      subscriptions: { t: 'a ||| b' },
      maxCachedMessages: 1,
    });
    expect(decodeError(subscribe).issues[0]?.path).toEqual(['subscriptions', 't']);
  });
});

describe('direction-specific decoders', () => {
  it('accept only their side of the conversation', () => {
    const hello = encodeFrame({ type: 'hello', protocolVersion: 1 });
    const welcome = encodeFrame({
      type: 'welcome',
      protocolVersion: 1,
      sessionId: 's',
      maxBodyBytes: 1,
      maxFrameBytes: 1,
    });
    expect(decodeClientFrame(hello).ok).toBe(true);
    expect(decodeClientFrame(welcome).ok).toBe(false);
    expect(decodeBrokerFrame(welcome).ok).toBe(true);
    expect(decodeBrokerFrame(hello).ok).toBe(false);
  });
});
