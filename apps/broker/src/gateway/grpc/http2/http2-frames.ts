/**
 * HTTP/2's frames (RFC 9113 §4, §6): their types, flags, settings and error codes, how one is
 * written, and a reader that cuts a connection's bytes into frames without copying them.
 */

/** What a client sends first, before its first frame (§3.4). */
export const CLIENT_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Every frame starts with its payload's length (3 bytes), type, flags and stream id (4 bytes). */
export const FRAME_PREFIX_BYTES = 9;

export const FRAME_TYPE = {
  DATA: 0x0,
  HEADERS: 0x1,
  PRIORITY: 0x2,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PUSH_PROMISE: 0x5,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const;

export const FLAG = {
  END_STREAM: 0x1,
  /** SETTINGS and PING: this frame acknowledges the peer's. */
  ACK: 0x1,
  END_HEADERS: 0x4,
  PADDED: 0x8,
  PRIORITY: 0x20,
} as const;

export const SETTING = {
  HEADER_TABLE_SIZE: 0x1,
  ENABLE_PUSH: 0x2,
  MAX_CONCURRENT_STREAMS: 0x3,
  INITIAL_WINDOW_SIZE: 0x4,
  MAX_FRAME_SIZE: 0x5,
  MAX_HEADER_LIST_SIZE: 0x6,
} as const;

/** Error codes of RST_STREAM and GOAWAY (§7). */
export const H2_ERROR = {
  NO_ERROR: 0x0,
  PROTOCOL_ERROR: 0x1,
  INTERNAL_ERROR: 0x2,
  FLOW_CONTROL_ERROR: 0x3,
  STREAM_CLOSED: 0x5,
  FRAME_SIZE_ERROR: 0x6,
  REFUSED_STREAM: 0x7,
  CANCEL: 0x8,
  COMPRESSION_ERROR: 0x9,
  ENHANCE_YOUR_CALM: 0xb,
} as const;

/** Every window starts at this until SETTINGS move it (§6.9.2); the largest one may be. */
export const DEFAULT_WINDOW_BYTES = 65_535;
export const MAX_WINDOW_BYTES = 2 ** 31 - 1;
/** The largest frame payload either side may send until the other announces more (§4.2). */
export const DEFAULT_MAX_FRAME_BYTES = 16_384;
export const LARGEST_MAX_FRAME_BYTES = 2 ** 24 - 1;

/** Why a connection ends: answered with GOAWAY and this code. */
export class Http2ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'Http2ConnectionError';
  }
}

/** One frame's 9-byte prefix, written at `at` in `target`. */
export function writeFramePrefix(
  target: Buffer,
  at: number,
  length: number,
  type: number,
  flags: number,
  streamId: number,
): void {
  target[at] = length >>> 16;
  target[at + 1] = (length >>> 8) & 0xff;
  target[at + 2] = length & 0xff;
  target[at + 3] = type;
  target[at + 4] = flags;
  target.writeUInt32BE(streamId, at + 5);
}

/** A whole frame: its prefix and `payload`, in one buffer. */
export function frameOf(type: number, flags: number, streamId: number, payload?: Uint8Array): Buffer {
  const length = payload?.length ?? 0;
  const frame = Buffer.allocUnsafe(FRAME_PREFIX_BYTES + length);
  writeFramePrefix(frame, 0, length, type, flags, streamId);
  if (payload !== undefined) frame.set(payload, FRAME_PREFIX_BYTES);
  return frame;
}

/** A frame as the reader hands it over: the payload is a view into the bytes read. */
export interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Buffer;
}

/**
 * Cuts a connection's bytes into frames. A frame that arrives in pieces is kept until whole; a
 * frame longer than the largest this side announced is refused before its payload is buffered.
 */
export class FrameReader {
  readonly #maxFrameBytes: number;
  #pending: Buffer | undefined;

  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  /**
   * The frames `chunk` completes, handed to `onFrame` in order.
   * @throws Http2ConnectionError FRAME_SIZE_ERROR for a frame past the limit.
   */
  push(chunk: Buffer, onFrame: (frame: Frame) => void): void {
    let buffer = chunk;
    if (this.#pending !== undefined) {
      buffer = Buffer.concat([this.#pending, chunk]);
      this.#pending = undefined;
    }
    let at = 0;
    while (buffer.length - at >= FRAME_PREFIX_BYTES) {
      const length =
        ((buffer[at] as number) << 16) | ((buffer[at + 1] as number) << 8) | (buffer[at + 2] as number);
      if (length > this.#maxFrameBytes) {
        throw new Http2ConnectionError(
          H2_ERROR.FRAME_SIZE_ERROR,
          `a frame of ${length} bytes, past the ${this.#maxFrameBytes} announced`,
        );
      }
      const end = at + FRAME_PREFIX_BYTES + length;
      if (end > buffer.length) break;
      onFrame({
        type: buffer[at + 3] as number,
        flags: buffer[at + 4] as number,
        // The stream id's top bit is reserved and ignored (§4.1).
        streamId: buffer.readUInt32BE(at + 5) & MAX_WINDOW_BYTES,
        payload: buffer.subarray(at + FRAME_PREFIX_BYTES, end),
      });
      at = end;
    }
    if (at < buffer.length) this.#pending = buffer.subarray(at);
  }
}

/**
 * A HEADERS or DATA frame's payload without its padding and priority fields (§6.1, §6.2).
 * @throws Http2ConnectionError PROTOCOL_ERROR when the padding is longer than the payload.
 */
export function unpadded(frame: Frame): Buffer {
  let { payload } = frame;
  let padding = 0;
  if (frame.flags & FLAG.PADDED) {
    if (payload.length < 1)
      throw new Http2ConnectionError(H2_ERROR.PROTOCOL_ERROR, 'a padded frame without its pad length');
    padding = payload[0] as number;
    payload = payload.subarray(1);
  }
  if (frame.type === FRAME_TYPE.HEADERS && frame.flags & FLAG.PRIORITY) {
    if (payload.length < 5)
      throw new Http2ConnectionError(H2_ERROR.PROTOCOL_ERROR, 'a HEADERS frame cut in its priority');
    payload = payload.subarray(5);
  }
  if (padding > payload.length) {
    throw new Http2ConnectionError(H2_ERROR.PROTOCOL_ERROR, 'padding longer than the frame');
  }
  return padding === 0 ? payload : payload.subarray(0, payload.length - padding);
}
