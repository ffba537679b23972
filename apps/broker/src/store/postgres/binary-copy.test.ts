import { describe, expect, it } from 'vitest';
import { BinaryCopyParser } from './binary-copy.js';

/** A binary COPY stream of `rows`, as PostgreSQL writes it (with a header extension of `extension` bytes). */
function copyStream(rows: readonly (Buffer | null)[][], extension = 0): Buffer {
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1')];
  const header = Buffer.alloc(8);
  header.writeInt32BE(0, 0);
  header.writeInt32BE(extension, 4);
  parts.push(header, Buffer.alloc(extension, 7));
  for (const row of rows) {
    const count = Buffer.alloc(2);
    count.writeInt16BE(row.length);
    parts.push(count);
    for (const field of row) {
      const length = Buffer.alloc(4);
      length.writeInt32BE(field === null ? -1 : field.length);
      parts.push(length);
      if (field !== null) parts.push(field);
    }
  }
  parts.push(Buffer.from([0xff, 0xff]));
  return Buffer.concat(parts);
}

/** `bytes` cut into chunks at the given sizes (the rest in the last), each a copy of its own. */
function* chunked(bytes: Buffer, sizes: Iterable<number>): Generator<Uint8Array> {
  let at = 0;
  for (const size of sizes) {
    if (at >= bytes.length) break;
    yield new Uint8Array(bytes.subarray(at, at + size));
    at += size;
  }
  if (at < bytes.length) yield new Uint8Array(bytes.subarray(at));
}

/** Every row the parser reads from `chunks`, as text, bigint and bytea (in hex). */
function readAll(chunks: Iterable<Uint8Array>): unknown[][] {
  const parser = new BinaryCopyParser(['text', 'bigint', 'bytea']);
  const rows: unknown[][] = [];
  for (const chunk of chunks) {
    for (const row of parser.push(chunk)) {
      rows.push(row.map((field) => (Buffer.isBuffer(field) ? field.toString('hex') : field)));
    }
  }
  parser.end();
  return rows;
}

const bigint = (value: number) => {
  const bytes = Buffer.alloc(8);
  bytes.writeBigInt64BE(BigInt(value));
  return bytes;
};

const ROWS = [
  [Buffer.from('orders'), bigint(7), Buffer.from([0x81, 0xa1, 0x61, 0x01])],
  [Buffer.from(''), null, Buffer.alloc(300, 9)],
  [Buffer.from('ünïcode'), bigint(Number.MAX_SAFE_INTEGER), Buffer.alloc(0)],
  [Buffer.from('negative'), bigint(-1), null],
];
const EXPECTED = [
  ['orders', 7, '81a16101'],
  ['', null, '09'.repeat(300)],
  ['ünïcode', Number.MAX_SAFE_INTEGER, ''],
  ['negative', -1, null],
];

describe('BinaryCopyParser', () => {
  it('reads every row of one whole stream, NULLs and empty fields included', () => {
    expect(readAll(chunked(copyStream(ROWS), []))).toEqual(EXPECTED);
  });

  it('reads the same rows however the stream is cut, through the header and inside fields', () => {
    const bytes = copyStream(ROWS, 5);
    // Seeded, so a failure repeats: cuts of 1 to 40 bytes.
    let seed = 17;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return 1 + (seed % 40);
    };
    for (let run = 0; run < 50; run++) {
      const sizes = Array.from({ length: bytes.length }, next);
      expect(readAll(chunked(bytes, sizes))).toEqual(EXPECTED);
    }
    expect(readAll(chunked(bytes, Array(bytes.length).fill(1)))).toEqual(EXPECTED);
  });

  it('reads a table with no rows', () => {
    expect(readAll(chunked(copyStream([]), []))).toEqual([]);
  });

  it('refuses a stream that is not binary COPY', () => {
    expect(() => readAll(chunked(Buffer.from('orders\t7\n\\.\n and more text'), []))).toThrow(
      /no PGCOPY signature/,
    );
  });

  it('refuses a stream cut off inside a row or before its trailer', () => {
    const bytes = copyStream(ROWS);
    expect(() => readAll(chunked(bytes.subarray(0, bytes.length - 10), []))).toThrow(
      /ended before its trailer/,
    );
    expect(() => readAll(chunked(bytes.subarray(0, bytes.length - 2), []))).toThrow(
      /ended before its trailer/,
    );
  });

  it('refuses a row with another number of fields than its columns', () => {
    expect(() => readAll(chunked(copyStream([[Buffer.from('x'), bigint(1)]]), []))).toThrow(
      /a row of 2 fields, not 3/,
    );
  });

  it('refuses data after the trailer', () => {
    expect(() => readAll(chunked(Buffer.concat([copyStream(ROWS), Buffer.from([0, 1])]), []))).toThrow(
      /data after its trailer/,
    );
  });
});
