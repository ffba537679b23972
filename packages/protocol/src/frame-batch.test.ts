import { describe, expect, it } from 'vitest';
import { decodeClientFrame, encodeFrame } from './codec.js';
import { encodeFrameBatch, MAX_FRAME_BATCH, peekFrameType, splitFrameBatch } from './frame-batch.js';
import { toHex } from './hex.js';

const hello = encodeFrame({ type: 'hello', protocolVersion: 1 });
const send = encodeFrame({
  type: 'send',
  id: 7,
  messages: [
    { messageId: '0123456789abcdef0123456789abcdef', topic: 'orders', body: new Uint8Array(300), bornAt: 1 },
  ],
});

describe('splitFrameBatch', () => {
  it('hands one frame on as it is', () => {
    const split = splitFrameBatch(send);
    expect(split).toEqual({ ok: true, frames: [send], isBatch: false });
  });

  it('splits an array of frames into the bytes of each, which decode as they were', () => {
    for (const count of [1, 2, 20]) {
      const frames = Array.from({ length: count }, (_, index) => (index % 2 === 0 ? send : hello));
      const split = splitFrameBatch(encodeFrameBatch(frames));
      if (!split.ok) throw new Error(split.message);
      expect(split.isBatch).toBe(true);
      expect(split.frames.map(toHex)).toEqual(frames.map(toHex));
      expect(split.frames.every((frame) => decodeClientFrame(frame).ok)).toBe(true);
    }
  });

  it('passes an element that is no frame on, for the decoder to refuse', () => {
    const split = splitFrameBatch(encodeFrameBatch([Uint8Array.of(0x2a), send]));
    if (!split.ok) throw new Error(split.message);
    expect(decodeClientFrame(split.frames[0] as Uint8Array).ok).toBe(false);
  });

  it.each([
    ['empty', new Uint8Array()],
    ['an empty array', Uint8Array.of(0x90)],
    ['truncated', send.subarray(0, send.byteLength - 1)],
    ['trailing bytes', Uint8Array.of(...send, 0x01)],
    ['an array claiming 2^32-1 elements', Uint8Array.of(0xdd, 0xff, 0xff, 0xff, 0xff, 0x80)],
    ['a truncated element', Uint8Array.of(0x92, 0x80, 0xc4, 0x10)],
    ['the unused byte 0xc1', Uint8Array.of(0x91, 0xc1)],
    ['too many frames', encodeFrameBatch(Array.from({ length: MAX_FRAME_BATCH + 1 }, () => hello))],
  ])('refuses %s', (_, bytes) => {
    expect(splitFrameBatch(bytes).ok).toBe(false);
  });

  it('walks deep garbage in one pass without recursing', () => {
    const deep = new Uint8Array(1_000_000).fill(0x91);
    expect(splitFrameBatch(deep).ok).toBe(false);
  });
});

describe('encodeFrameBatch', () => {
  it('uses the array 16 header past 15 frames', () => {
    const batch = encodeFrameBatch(Array.from({ length: 16 }, () => hello));
    expect([...batch.subarray(0, 3)]).toEqual([0xdc, 0, 16]);
  });
});

describe('peekFrameType', () => {
  it('reads the type wherever the map has it', () => {
    expect(peekFrameType(send)).toBe('send');
    expect(peekFrameType(hello)).toBe('hello');
    const typeLast = Uint8Array.of(
      0x82,
      0xa2,
      0x69,
      0x64,
      0x01,
      0xa4,
      0x74,
      0x79,
      0x70,
      0x65,
      0xa6,
      0x63,
      0x72,
      0x65,
      0x64,
      0x69,
      0x74,
    );
    expect(peekFrameType(typeLast)).toBe('credit');
  });

  it.each([
    ['no map', Uint8Array.of(0x91, 0x80)],
    ['no type', Uint8Array.of(0x81, 0xa2, 0x69, 0x64, 0x01)],
    ['a type that is no string', Uint8Array.of(0x81, 0xa4, 0x74, 0x79, 0x70, 0x65, 0x01)],
    ['a truncated map', Uint8Array.of(0x82, 0xa2, 0x69)],
    ['nothing', new Uint8Array()],
  ])('answers undefined for %s', (_, bytes) => {
    expect(peekFrameType(bytes)).toBeUndefined();
  });
});
