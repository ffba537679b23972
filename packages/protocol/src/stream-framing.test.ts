import { describe, expect, it } from 'vitest';
import { fromHex, toHex } from './hex.js';
import {
  encodeStreamClose,
  encodeStreamFrame,
  StreamFrameReader,
  type StreamRecord,
} from './stream-framing.js';

const frame = (bytes: number[]) => new Uint8Array(bytes);

describe('stream framing', () => {
  it('prefixes a frame with its length, 4 bytes big-endian', () => {
    expect(toHex(encodeStreamFrame(frame([0x81, 0xa1, 0x61])))).toBe('0000000381a161');
  });

  it('writes the close record as a zero length, then a WebSocket close payload with its length', () => {
    expect(toHex(encodeStreamClose(1001, 'bye'))).toBe('000000000000000503e9627965');
  });

  it('cuts a long close reason to 123 bytes at a character boundary', () => {
    const record = encodeStreamClose(1008, 'é'.repeat(100));
    const [read] = new StreamFrameReader(1024).push(record);
    expect(read).toEqual({ type: 'close', code: 1008, reason: 'é'.repeat(61) });
  });

  it('reads frames split over chunks and many frames in one chunk, whole and in order', () => {
    const frames = [
      frame([1]),
      frame([2, 3, 4, 5, 6]),
      frame(Array.from({ length: 300 }, (_, i) => i % 256)),
    ];
    const stream = concat([...frames.map(encodeStreamFrame), encodeStreamClose(1000, 'done')]);
    for (const chunkBytes of [1, 2, 3, 7, 64, stream.length]) {
      const reader = new StreamFrameReader(1024);
      const records: StreamRecord[] = [];
      for (let offset = 0; offset < stream.length; offset += chunkBytes) {
        records.push(...reader.push(stream.subarray(offset, offset + chunkBytes)));
      }
      expect(records).toEqual([
        ...frames.map((bytes) => ({ type: 'frame', bytes })),
        { type: 'close', code: 1000, reason: 'done' },
      ]);
    }
  });

  it('reports a length over the limit once, before reading the frame, and then nothing more', () => {
    const reader = new StreamFrameReader(4);
    expect(reader.push(fromHex('00000005'))).toEqual([{ type: 'oversize', length: 5 }]);
    expect(reader.push(encodeStreamFrame(frame([1])))).toEqual([]);
  });

  it('takes a frame exactly at the limit', () => {
    expect(new StreamFrameReader(4).push(encodeStreamFrame(frame([1, 2, 3, 4])))).toEqual([
      { type: 'frame', bytes: frame([1, 2, 3, 4]) },
    ]);
  });

  it('reads text where a length belongs as the huge length it is', () => {
    const reader = new StreamFrameReader(1024 * 1024);
    const http = Uint8Array.from('GET / HTTP/1.1\r\n', (char) => char.charCodeAt(0));
    expect(reader.push(http)).toEqual([{ type: 'oversize', length: 0x47455420 }]);
  });

  it.each([
    ['0000000000000001e8', 1],
    ['00000000000000ff', 255],
  ])('refuses a close record %s whose payload length %i breaks the layout', (hex, length) => {
    expect(new StreamFrameReader(1024).push(fromHex(hex))).toEqual([
      { type: 'invalid', message: `a close record carries 2 to 125 bytes, not ${length}` },
    ]);
  });

  it('waits for more bytes while a record is incomplete', () => {
    const reader = new StreamFrameReader(1024);
    expect(reader.push(fromHex('000000'))).toEqual([]);
    expect(reader.push(fromHex('0201'))).toEqual([]);
    expect(reader.push(fromHex('02'))).toEqual([{ type: 'frame', bytes: frame([1, 2]) }]);
  });
});

function concat(parts: Uint8Array[]): Uint8Array {
  const joined = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}
