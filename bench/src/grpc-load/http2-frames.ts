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
 * A header field as a literal never added to the decoder's table (§6.2.2): a request's headers
 * cost the server a decode of plain bytes and nothing to remember. Pseudo-headers name their
 * static-table entry (`nameIndex`); other names are written out.
 */
export function hpackLiteral(name: string | number, value: string): Buffer {
  const prefix =
    typeof name === 'number'
      ? Buffer.from(hpackInteger(name, 4, 0x00))
      : Buffer.concat([Buffer.from([0x00]), hpackString(name)]);
  return Buffer.concat([prefix, hpackString(value)]);
}

/** HPACK's static table entries a request names (RFC 7541 Appendix A). */
export const STATIC = { AUTHORITY: 1, METHOD_POST: 3, PATH: 4, SCHEME_HTTP: 6 } as const;

export function windowUpdate(streamId: number, increment: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(increment, 0);
  return frame(FRAME.WINDOW_UPDATE, 0, streamId, payload);
}
