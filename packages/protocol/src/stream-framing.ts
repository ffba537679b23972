/**
 * Frames over a byte stream (the `tcp://` and `tls://` transports): each frame is a 4-byte
 * big-endian length N and then N bytes, exactly the bytes a WebSocket binary message carries.
 * A stream has no close frame of its own, so a zero length marks the close record that takes its
 * place: `00 00 00 00`, a 4-byte length M (2 ≤ M ≤ 125) and M bytes laid out like a WebSocket
 * close frame's payload (a 2-byte code, then a UTF-8 reason). After it the sender ends the stream;
 * the reader ignores anything that follows.
 * @see docs/protocol/transports.md
 */

// Every runtime the protocol runs in (browsers, Node, Deno, Bun) has these; the package is
// compiled without DOM or Node types, so their shapes are declared here.
declare const TextEncoder: new () => { encode(text: string): Uint8Array };
declare const TextDecoder: new (label: string) => { decode(bytes: Uint8Array): string };

/** The bytes of a length prefix. */
export const STREAM_LENGTH_PREFIX_BYTES = 4;

/** The largest close payload: a WebSocket close frame's limit (2-byte code + 123 bytes of reason). */
export const MAX_STREAM_CLOSE_PAYLOAD_BYTES = 125;

/** What a {@link StreamFrameReader} found in the bytes read so far. */
export type StreamRecord =
  /** One frame's bytes, to decode with the codec. */
  | { readonly type: 'frame'; readonly bytes: Uint8Array }
  /** The peer closed with a code and reason, as a WebSocket close frame would. */
  | { readonly type: 'close'; readonly code: number; readonly reason: string }
  /** A length prefix over the reader's limit: the frame is not read, the stream cannot go on. */
  | { readonly type: 'oversize'; readonly length: number }
  /** A close record that breaks the layout above: the stream cannot go on. */
  | { readonly type: 'invalid'; readonly message: string };

/** The length prefix of a frame of `frameBytes` bytes; write it, then the frame. */
export function streamFramePrefix(frameBytes: number): Uint8Array {
  const prefix = new Uint8Array(STREAM_LENGTH_PREFIX_BYTES);
  new DataView(prefix.buffer).setUint32(0, frameBytes);
  return prefix;
}

/** One frame with its length prefix, in one buffer. */
export function encodeStreamFrame(frame: Uint8Array): Uint8Array {
  const record = new Uint8Array(STREAM_LENGTH_PREFIX_BYTES + frame.length);
  record.set(streamFramePrefix(frame.length));
  record.set(frame, STREAM_LENGTH_PREFIX_BYTES);
  return record;
}

/**
 * The close record for `code` and `reason`. A reason longer than a WebSocket close frame allows is
 * cut at a character boundary.
 */
export function encodeStreamClose(code: number, reason: string): Uint8Array {
  const reasonBytes = utf8Prefix(reason, MAX_STREAM_CLOSE_PAYLOAD_BYTES - 2);
  const payloadBytes = 2 + reasonBytes.length;
  const record = new Uint8Array(2 * STREAM_LENGTH_PREFIX_BYTES + payloadBytes);
  const view = new DataView(record.buffer);
  view.setUint32(STREAM_LENGTH_PREFIX_BYTES, payloadBytes);
  view.setUint16(2 * STREAM_LENGTH_PREFIX_BYTES, code);
  record.set(reasonBytes, 2 * STREAM_LENGTH_PREFIX_BYTES + 2);
  return record;
}

/**
 * Reads length-prefixed records from a byte stream that arrives in chunks of any size: a frame
 * split over many chunks, and many frames in one chunk, both come out whole. A frame that sits
 * inside one chunk is returned as a view of it, without a copy. After a `close`, `oversize` or
 * `invalid` record the reader returns nothing more: the stream is over.
 */
export class StreamFrameReader {
  readonly #maxFrameBytes: number;
  #chunks: Uint8Array[] = [];
  #buffered = 0;
  #ended = false;

  /** @param maxFrameBytes - the largest frame read; a larger length prefix ends the stream. */
  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  /** Whether part of a record has been read and the rest not yet: the peer is mid-frame. */
  get midRecord(): boolean {
    return this.#buffered > 0;
  }

  /** The records that `chunk` completes, in order. */
  push(chunk: Uint8Array): StreamRecord[] {
    if (this.#ended) return [];
    if (chunk.length > 0) {
      this.#chunks.push(chunk);
      this.#buffered += chunk.length;
    }
    const records: StreamRecord[] = [];
    while (!this.#ended) {
      const record = this.#next();
      if (record === undefined) break;
      records.push(record);
      if (record.type !== 'frame') this.#end();
    }
    return records;
  }

  #next(): StreamRecord | undefined {
    if (this.#buffered < STREAM_LENGTH_PREFIX_BYTES) return undefined;
    const length = readUint32(this.#peek(STREAM_LENGTH_PREFIX_BYTES), 0);
    if (length === 0) return this.#nextClose();
    if (length > this.#maxFrameBytes) return { type: 'oversize', length };
    if (this.#buffered < STREAM_LENGTH_PREFIX_BYTES + length) return undefined;
    return { type: 'frame', bytes: this.#take(STREAM_LENGTH_PREFIX_BYTES + length).subarray(4) };
  }

  #nextClose(): StreamRecord | undefined {
    const headerBytes = 2 * STREAM_LENGTH_PREFIX_BYTES;
    if (this.#buffered < headerBytes) return undefined;
    const payloadBytes = readUint32(this.#peek(headerBytes), STREAM_LENGTH_PREFIX_BYTES);
    if (payloadBytes < 2 || payloadBytes > MAX_STREAM_CLOSE_PAYLOAD_BYTES) {
      return {
        type: 'invalid',
        message: `a close record carries 2 to ${MAX_STREAM_CLOSE_PAYLOAD_BYTES} bytes, not ${payloadBytes}`,
      };
    }
    if (this.#buffered < headerBytes + payloadBytes) return undefined;
    const payload = this.#take(headerBytes + payloadBytes).subarray(headerBytes);
    const code = (payload[0] ?? 0) * 256 + (payload[1] ?? 0);
    const reason = new TextDecoder('utf-8').decode(payload.subarray(2));
    return { type: 'close', code, reason };
  }

  /** The first `count` buffered bytes, joined only when they span chunks. */
  #peek(count: number): Uint8Array {
    const first = this.#chunks[0] as Uint8Array;
    if (first.length >= count) return first;
    return this.#join(count, false);
  }

  /** Remove and return the first `count` buffered bytes. */
  #take(count: number): Uint8Array {
    const first = this.#chunks[0] as Uint8Array;
    this.#buffered -= count;
    if (first.length > count) {
      this.#chunks[0] = first.subarray(count);
      return first.subarray(0, count);
    }
    if (first.length === count) {
      this.#chunks.shift();
      return first;
    }
    return this.#join(count, true);
  }

  /** Copy the first `count` bytes out of the chunks into one buffer, consuming them if asked. */
  #join(count: number, consume: boolean): Uint8Array {
    const joined = new Uint8Array(count);
    let filled = 0;
    let index = 0;
    while (filled < count) {
      const chunk = this.#chunks[index] as Uint8Array;
      const used = Math.min(chunk.length, count - filled);
      joined.set(chunk.subarray(0, used), filled);
      filled += used;
      if (consume && used < chunk.length) this.#chunks[index] = chunk.subarray(used);
      else index++;
    }
    // The chunks before `index` were used up; a partly used one was cut above.
    if (consume) this.#chunks.splice(0, index);
    return joined;
  }

  #end(): void {
    this.#ended = true;
    this.#chunks = [];
    this.#buffered = 0;
  }
}

function readUint32(bytes: Uint8Array, offset: number): number {
  return new DataView(bytes.buffer, bytes.byteOffset + offset, 4).getUint32(0);
}

/** The UTF-8 bytes of the longest prefix of `text` that fits in `maxBytes`. */
function utf8Prefix(text: string, maxBytes: number): Uint8Array {
  const encoder = new TextEncoder();
  let bytes = encoder.encode(text);
  if (bytes.length <= maxBytes) return bytes;
  let end = text.length;
  while (bytes.length > maxBytes && end > 0) {
    end--;
    bytes = encoder.encode(text.slice(0, end));
  }
  return bytes;
}
