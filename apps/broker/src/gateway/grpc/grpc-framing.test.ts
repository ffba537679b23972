import { describe, expect, it } from 'vitest';
import { deadlineOf, frameMessage, GRPC_STATUS, GrpcFramingError, MessageReader } from './grpc-framing.js';

const bytes = (...values: number[]) => Buffer.from(values);

describe('MessageReader', () => {
  it('reads messages split over chunks and several in one chunk, in order', () => {
    const stream = Buffer.concat([
      frameMessage(bytes(1, 2, 3)),
      frameMessage(bytes()),
      frameMessage(bytes(4)),
    ]);
    // Every way of cutting the stream in two gives the same messages.
    for (let cut = 0; cut <= stream.length; cut++) {
      const reader = new MessageReader(16);
      const read = [...reader.push(stream.subarray(0, cut)), ...reader.push(stream.subarray(cut))];
      expect(read.map((message) => [...message.bytes])).toEqual([[1, 2, 3], [], [4]]);
      expect(reader.midMessage).toBe(false);
    }
  });

  it('keeps a message begun and not finished, and says so', () => {
    const reader = new MessageReader(16);
    expect(reader.push(frameMessage(bytes(1, 2, 3)).subarray(0, 6))).toEqual([]);
    expect(reader.midMessage).toBe(true);
  });

  it('reads the compressed flag', () => {
    const frame = frameMessage(bytes(9));
    frame[0] = 1;
    expect(new MessageReader(16).push(frame)).toEqual([{ compressed: true, bytes: bytes(9) }]);
  });

  it('refuses a message longer than the limit from its prefix alone, RESOURCE_EXHAUSTED', () => {
    const prefix = Buffer.alloc(5);
    prefix.writeUInt32BE(17, 1);
    const read = () => new MessageReader(16).push(prefix);
    expect(read).toThrow(GrpcFramingError);
    expect(read).toThrow(expect.objectContaining({ grpcStatus: GRPC_STATUS.RESOURCE_EXHAUSTED }));
    expect(new MessageReader(16).push(frameMessage(Buffer.alloc(16)))).toHaveLength(1);
  });
});

describe('deadlineOf', () => {
  it('reads every unit of grpc-timeout from now', () => {
    expect(deadlineOf('2H', 1_000)).toBe(1_000 + 7_200_000);
    expect(deadlineOf('3M', 0)).toBe(180_000);
    expect(deadlineOf('30S', 0)).toBe(30_000);
    expect(deadlineOf('250m', 0)).toBe(250);
    expect(deadlineOf('5000u', 0)).toBe(5);
    expect(deadlineOf('3000000n', 0)).toBe(3);
  });

  it('reads no header, or one the spec does not allow, as no deadline', () => {
    for (const header of [undefined, '', '10', 'S', '123456789S', '1.5S', '10s']) {
      expect(deadlineOf(header, 0)).toBe(Number.POSITIVE_INFINITY);
    }
  });
});
