/**
 * HPACK (RFC 7541), the header compression of HTTP/2: a decoder for the header blocks a client
 * sends, with its dynamic table, and a stateless encoder for the server's own header blocks.
 */
import { HuffmanDecodingError, huffmanDecode } from './hpack-huffman.js';

/** A malformed header block; HTTP/2 answers it with a connection error COMPRESSION_ERROR. */
export class HpackDecodingError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'HpackDecodingError';
  }
}

/** One decoded header block. */
export interface DecodedHeaders {
  /** Names and values in block order, flat: name0, value0, name1, value1, … */
  readonly fields: string[];
  /**
   * The header list is larger than `maxHeaderListBytes` (RFC 9113 §6.5.2). `fields` then holds the
   * fields before the one that crossed the limit, and none after it.
   */
  readonly tooLarge: boolean;
}

/** The static table (RFC 7541 Appendix A): index i + 1 is STATIC_TABLE[i]. */
export const STATIC_TABLE: readonly (readonly [name: string, value: string])[] = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];

const STATIC_COUNT = STATIC_TABLE.length;
const EMPTY = Buffer.alloc(0);
const STATIC_NAMES = STATIC_TABLE.map(([name]) => name);
const STATIC_VALUES = STATIC_TABLE.map(([, value]) => value);

/** The bytes an entry counts for, in the dynamic table and in a header list (RFC 7541 §4.1). */
const ENTRY_OVERHEAD = 32;

// 2^31 - 1: larger integers are refused, so every length and index stays a small integer.
const MAX_INTEGER = 0x7fffffff;
// Five continuation bytes carry 35 bits, more than any integer accepted needs.
const MAX_CONTINUATION_BYTES = 5;

/**
 * Decodes the header blocks of one HTTP/2 connection, in the order they arrive: the dynamic table
 * carries over from block to block, so every block must be decoded, even one whose stream is refused.
 */
export class HpackDecoder {
  readonly #maxTableBytes: number;
  readonly #maxHeaderListBytes: number;
  // The table's size limit, as last set by the peer's size updates (at most #maxTableBytes).
  #capacity: number;
  #tableBytes = 0;
  // The dynamic table as a ring: #newest is the slot of index 62, older entries precede it.
  #names: string[] = new Array<string>(16).fill('');
  #values: string[] = new Array<string>(16).fill('');
  #newest = 0;
  #count = 0;
  // The block being decoded and the read position in it.
  #block: Buffer = EMPTY;
  #pos = 0;

  /**
   * `maxTableBytes` is the SETTINGS_HEADER_TABLE_SIZE this side announced; `maxHeaderListBytes`
   * the header list size above which a block is `tooLarge`.
   */
  constructor(options: { maxTableBytes: number; maxHeaderListBytes: number }) {
    this.#maxTableBytes = options.maxTableBytes;
    this.#maxHeaderListBytes = options.maxHeaderListBytes;
    this.#capacity = options.maxTableBytes;
  }

  /** The dynamic table's current size in bytes (RFC 7541 §4.1). */
  get tableBytes(): number {
    return this.#tableBytes;
  }

  /** How many entries the dynamic table holds. */
  get tableEntries(): number {
    return this.#count;
  }

  /**
   * Decodes one complete header block (HEADERS and its CONTINUATIONs). Throws HpackDecodingError,
   * after which the table may be half-updated: the connection must end.
   */
  decode(block: Uint8Array): DecodedHeaders {
    this.#block = Buffer.isBuffer(block) ? block : Buffer.from(block.buffer, block.byteOffset, block.length);
    this.#pos = 0;
    const fields: string[] = [];
    let listBytes = 0;
    let tooLarge = false;
    let sawField = false;
    try {
      const end = this.#block.length;
      while (this.#pos < end) {
        const first = this.#block[this.#pos] ?? 0;
        let name: string;
        let value: string;
        if (first >= 0x80) {
          // Indexed field (§6.1).
          const index = this.#integer(7);
          name = this.#name(index);
          value = index <= STATIC_COUNT ? (STATIC_VALUES[index - 1] ?? '') : this.#dynamicValue(index);
        } else if (first >= 0x40) {
          // Literal with incremental indexing (§6.2.1): enters the dynamic table.
          const index = this.#integer(6);
          name = index === 0 ? this.#string() : this.#name(index);
          value = this.#string();
          this.#insert(name, value);
        } else if (first >= 0x20) {
          // Dynamic table size update (§6.3): only before the block's first field (RFC 9113 §4.3.1).
          if (sawField) throw new HpackDecodingError('dynamic table size update after a header field');
          const size = this.#integer(5);
          if (size > this.#maxTableBytes) {
            throw new HpackDecodingError(`dynamic table size update to ${size} above ${this.#maxTableBytes}`);
          }
          this.#capacity = size;
          this.#evictTo(size);
          continue;
        } else {
          // Literal without indexing (0000xxxx) or never indexed (0001xxxx): the same to a decoder.
          const index = this.#integer(4);
          name = index === 0 ? this.#string() : this.#name(index);
          value = this.#string();
        }
        sawField = true;
        if (tooLarge) continue;
        listBytes += name.length + value.length + ENTRY_OVERHEAD;
        if (listBytes > this.#maxHeaderListBytes) {
          tooLarge = true;
          continue;
        }
        fields.push(name, value);
      }
    } catch (error) {
      if (error instanceof HuffmanDecodingError)
        throw new HpackDecodingError(error.message, { cause: error });
      throw error;
    } finally {
      // Do not keep the caller's buffer alive between blocks.
      this.#block = EMPTY;
    }
    return { fields, tooLarge };
  }

  /** Reads an integer with an N-bit prefix (§5.1) at the read position. */
  #integer(prefixBits: number): number {
    const block = this.#block;
    const mask = (1 << prefixBits) - 1;
    let value = (block[this.#pos] ?? 0) & mask;
    this.#pos += 1;
    if (value < mask) return value;
    let factor = 1;
    for (let continuation = 1; ; continuation++) {
      if (continuation > MAX_CONTINUATION_BYTES) throw new HpackDecodingError('integer too long');
      if (this.#pos >= block.length) throw new HpackDecodingError('header block ends inside an integer');
      const byte = block[this.#pos] ?? 0;
      this.#pos += 1;
      // Multiplication, not shifts: 35 bits do not fit a 32-bit shift.
      value += (byte & 0x7f) * factor;
      if (value > MAX_INTEGER) throw new HpackDecodingError('integer above 2^31-1');
      if (byte < 0x80) return value;
      factor *= 128;
    }
  }

  /** Reads a string literal (§5.2), Huffman-coded or raw, as latin1. */
  #string(): string {
    const block = this.#block;
    if (this.#pos >= block.length) throw new HpackDecodingError('header block ends before a string');
    const huffman = (block[this.#pos] ?? 0) >= 0x80;
    const length = this.#integer(7);
    const start = this.#pos;
    const end = start + length;
    if (end > block.length) throw new HpackDecodingError('string runs past the end of the header block');
    this.#pos = end;
    return huffman ? huffmanDecode(block, start, end) : block.toString('latin1', start, end);
  }

  /** The name at a table index (§2.3.3): static first, then dynamic, newest first. */
  #name(index: number): string {
    if (index === 0) throw new HpackDecodingError('index 0');
    if (index <= STATIC_COUNT) return STATIC_NAMES[index - 1] ?? '';
    return this.#names[this.#slot(index)] ?? '';
  }

  #dynamicValue(index: number): string {
    return this.#values[this.#slot(index)] ?? '';
  }

  #slot(index: number): number {
    const age = index - STATIC_COUNT - 1;
    if (age >= this.#count) throw new HpackDecodingError(`index ${index} past the tables' end`);
    return (this.#newest - age) & (this.#names.length - 1);
  }

  /** Adds an entry at the newest end, evicting from the oldest to make room (§4.4). */
  #insert(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    if (size > this.#capacity) {
      // Not an error: the table empties and the entry is not kept.
      this.#evictTo(0);
      return;
    }
    this.#evictTo(this.#capacity - size);
    if (this.#count === this.#names.length) this.#grow();
    this.#newest = (this.#newest + 1) & (this.#names.length - 1);
    this.#names[this.#newest] = name;
    this.#values[this.#newest] = value;
    this.#count += 1;
    this.#tableBytes += size;
  }

  /** Evicts the oldest entries until the table holds at most `bytes`. */
  #evictTo(bytes: number): void {
    const mask = this.#names.length - 1;
    while (this.#tableBytes > bytes) {
      const oldest = (this.#newest - this.#count + 1) & mask;
      this.#tableBytes -=
        (this.#names[oldest] ?? '').length + (this.#values[oldest] ?? '').length + ENTRY_OVERHEAD;
      // Drop the strings so the table does not keep them alive.
      this.#names[oldest] = '';
      this.#values[oldest] = '';
      this.#count -= 1;
    }
  }

  /** Doubles the ring (its length stays a power of two), oldest entry first at slot 0. */
  #grow(): void {
    const length = this.#names.length;
    const names = new Array<string>(length * 2).fill('');
    const values = new Array<string>(length * 2).fill('');
    for (let age = this.#count - 1, slot = 0; age >= 0; age--, slot++) {
      const from = (this.#newest - age) & (length - 1);
      names[slot] = this.#names[from] ?? '';
      values[slot] = this.#values[from] ?? '';
    }
    this.#names = names;
    this.#values = values;
    this.#newest = this.#count - 1;
  }
}

// For the encoder: a static entry's index by name and value, and a name's lowest index.
const STATIC_FIELD_INDEX = new Map<string, number>();
const STATIC_NAME_INDEX = new Map<string, number>();
STATIC_TABLE.forEach(([name, value], i) => {
  STATIC_FIELD_INDEX.set(`${name}\0${value}`, i + 1);
  if (!STATIC_NAME_INDEX.has(name)) STATIC_NAME_INDEX.set(name, i + 1);
});

/**
 * Encodes a server's header block without a dynamic table, so its peer's decoder state never
 * matters: a field found whole in the static table is indexed, any other is a literal without
 * indexing, its name indexed when the static table has it. Strings are raw latin1, never Huffman.
 * Names must already be lowercase, as HTTP/2 requires.
 */
export function encodeHeaderBlock(fields: readonly (readonly [name: string, value: string])[]): Buffer {
  // Sized in a first pass so the block is written into one allocation.
  let size = 0;
  const indexes = new Int32Array(fields.length);
  for (let i = 0; i < fields.length; i++) {
    const [name, value] = fields[i] ?? ['', ''];
    const whole = STATIC_FIELD_INDEX.get(`${name}\0${value}`);
    if (whole !== undefined) {
      indexes[i] = whole;
      size += integerBytes(whole, 7);
      continue;
    }
    const named = STATIC_NAME_INDEX.get(name);
    indexes[i] = -(named ?? 0);
    size += named === undefined ? 1 + stringBytes(name) : integerBytes(named, 4);
    size += stringBytes(value);
  }
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  for (let i = 0; i < fields.length; i++) {
    const [name, value] = fields[i] ?? ['', ''];
    const index = indexes[i] ?? 0;
    if (index > 0) {
      pos = writeInteger(out, pos, index, 7, 0x80);
      continue;
    }
    if (index < 0) {
      pos = writeInteger(out, pos, -index, 4, 0x00);
    } else {
      out[pos++] = 0x00;
      pos = writeString(out, pos, name);
    }
    pos = writeString(out, pos, value);
  }
  return out;
}

function integerBytes(value: number, prefixBits: number): number {
  const mask = (1 << prefixBits) - 1;
  if (value < mask) return 1;
  let bytes = 2;
  for (let rest = value - mask; rest >= 0x80; rest = Math.floor(rest / 128)) bytes += 1;
  return bytes;
}

function stringBytes(value: string): number {
  return integerBytes(value.length, 7) + value.length;
}

function writeInteger(out: Buffer, at: number, value: number, prefixBits: number, flags: number): number {
  const mask = (1 << prefixBits) - 1;
  let pos = at;
  if (value < mask) {
    out[pos++] = flags | value;
    return pos;
  }
  out[pos++] = flags | mask;
  let rest = value - mask;
  while (rest >= 0x80) {
    out[pos++] = (rest % 128) | 0x80;
    rest = Math.floor(rest / 128);
  }
  out[pos++] = rest;
  return pos;
}

function writeString(out: Buffer, at: number, value: string): number {
  // H bit clear: raw octets.
  const pos = writeInteger(out, at, value.length, 7, 0x00);
  return pos + out.write(value, pos, 'latin1');
}
