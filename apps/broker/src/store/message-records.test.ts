import { pack } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { MessageRecordEncoder } from './message-records.js';

describe('the messages database’s encoder', () => {
  it('reads a bin of each length form back whole, header included, into memory of its own', () => {
    const encoder = new MessageRecordEncoder({ useRecords: false });
    for (const size of [0, 1, 255, 256, 65_535, 65_536, 300_000]) {
      const value = pack(new Uint8Array(size).map((_, index) => index % 251));
      // As lmdb-js hands a value over: inside a larger read buffer that it reuses afterwards.
      const readBuffer = Buffer.alloc(value.length + 16);
      value.copy(readBuffer, 7);
      const read = encoder.decode(readBuffer.subarray(7, 7 + value.length)) as Uint8Array;
      readBuffer.fill(0);
      expect(Buffer.compare(read, value)).toBe(0);
    }
  });

  it('leaves a layout 1 message, a map, to msgpackr', () => {
    const encoder = new MessageRecordEncoder({ useRecords: false });
    const message = { messageId: 'm', topic: 't', offset: 3, body: new Uint8Array([1]) };
    expect(encoder.decode(encoder.encode(message))).toEqual({ ...message, body: Buffer.from([1]) });
  });
});
