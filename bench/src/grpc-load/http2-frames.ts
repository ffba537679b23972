/**
 * HTTP/2's frames (RFC 9113) and HPACK's literals (RFC 7541), the part a client of short calls
 * writes and reads: the load generator frames HTTP/2 by hand ({@link RawConnection}).
 */

export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
export const FRAME_PREFIX_BYTES = 9;
export const FRAME = {
  DATA: 0x0,
  HEADERS: 0x1,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;
export const SETTING = {
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
} as const;
export const REFUSED_STREAM = 0x7;
/** Every flow-control window starts at this (RFC 9113 §6.9.2) until SETTINGS say otherwise. */
export const DEFAULT_WINDOW = 65_535;
export const MAX_WINDOW = 2 ** 31 - 1;
export const DEFAULT_MAX_FRAME = 16_384;

/** One frame's bytes: the 9-byte prefix (length, type, flags, stream) and the payload. */
export function frame(
  type: number,
  flags: number,
  streamId: number,
  payload: Uint8Array = Buffer.alloc(0),
): Buffer {
  const bytes = Buffer.allocUnsafe(FRAME_PREFIX_BYTES + payload.length);
  bytes.writeUIntBE(payload.length, 0, 3);
  bytes[3] = type;
  bytes[4] = flags;
  bytes.writeUInt32BE(streamId, 5);
  bytes.set(payload, FRAME_PREFIX_BYTES);
  return bytes;
}

/** An HPACK integer with an `prefixBits`-bit prefix whose high bits are `pattern` (RFC 7541 §5.1). */
function hpackInteger(value: number, prefixBits: number, pattern: number): number[] {
  const limit = (1 << prefixBits) - 1;
  if (value < limit) return [pattern | value];
  const bytes = [pattern | limit];
  let rest = value - limit;
  while (rest >= 128) {
    bytes.push((rest % 128) | 128);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return bytes;
}

/** An HPACK string literal, not Huffman-coded (§5.2): any decoder reads it. */
function hpackString(text: string): Buffer {
  const bytes = Buffer.from(text, 'latin1');
  return Buffer.concat([Buffer.from(hpackInteger(bytes.length, 7, 0)), bytes]);
}

/**
 * A header field as a literal never added to the decoder's table (§6.2.2): for a value that
 * changes with every request (its request id), which indexing would only churn the table with.
 */
export function hpackLiteral(name: string, value: string): Buffer {
  return Buffer.concat([Buffer.from([0x00]), hpackString(name), hpackString(value)]);
}

/** HPACK's static table entries every request is (RFC 7541 Appendix A). */
export const STATIC = { METHOD_POST: 3, SCHEME_HTTP: 6 } as const;

export function windowUpdate(streamId: number, increment: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(increment, 0);
  return frame(FRAME.WINDOW_UPDATE, 0, streamId, payload);
}

/** HPACK's first dynamic table index (RFC 7541 §2.3.3): entries come after the 61 static ones. */
const FIRST_DYNAMIC_INDEX = 62;
/** The dynamic table's size until the server's SETTINGS say otherwise (RFC 9113 §6.5.2). */
const DEFAULT_TABLE_BYTES = 4_096;

/**
 * The fields every request repeats, kept in the server's dynamic table as nghttp2's and netty's
 * encoders keep them: sent as literals with incremental indexing the first time, then as one
 * index each. So the server decodes what it would from the official clients, not 14 literal
 * strings per call. Only a bounded set is ever inserted (the caller's constant fields), so the
 * table never evicts and an entry's index moves only when a later one is inserted.
 */
export class RequestFieldEncoder {
  readonly #ordinals = new Map<string, number>();
  #inserted = 0;
  #tableBytes = 0;

  /** How many fields were inserted: a block built when this was the same is still valid. */
  get inserted(): number {
    return this.#inserted;
  }

  /** `name: value`, inserted the first time and indexed after. */
  indexed(name: string, value: string): Buffer {
    const key = `${name}\0${value}`;
    const ordinal = this.#ordinals.get(key);
    if (ordinal !== undefined) {
      return Buffer.from(hpackInteger(FIRST_DYNAMIC_INDEX + this.#inserted - 1 - ordinal, 7, 0x80));
    }
    // An entry's size is its name's and value's octets plus 32 (RFC 7541 §4.1).
    this.#tableBytes += Buffer.byteLength(name, 'latin1') + Buffer.byteLength(value, 'latin1') + 32;
    if (this.#tableBytes > DEFAULT_TABLE_BYTES)
      throw new Error('the indexed fields would overflow the table');
    this.#ordinals.set(key, this.#inserted++);
    return Buffer.concat([Buffer.from([0x40]), hpackString(name), hpackString(value)]);
  }
}
