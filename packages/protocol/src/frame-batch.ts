import { containerHeaderLength, containerSize, scalarLength } from './nesting-depth.js';

/** The most frames one batch (one HTTP request or answer) may carry. */
export const MAX_FRAME_BATCH = 128;

/** The frames of a body, each still encoded, and whether the body was an array of them. */
export type FrameBatchSplit =
  | { readonly ok: true; readonly frames: readonly Uint8Array[]; readonly isBatch: boolean }
  | { readonly ok: false; readonly message: string };

/**
 * Split an HTTP body into its frames without decoding them: a body is one frame (a MessagePack
 * map), or a MessagePack array of frames. Each element is handed on as its own bytes, so the
 * decoder judges it exactly as it judges a WebSocket message (an element that is no frame gets
 * that frame's error, not the whole batch's). The walk reads value headers only, is iterative,
 * and stops at the end of the input, so garbage costs at most one step per byte.
 */
export function splitFrameBatch(bytes: Uint8Array): FrameBatchSplit {
  if (bytes.byteLength === 0)
    return { ok: false, message: 'the body is empty: send a frame or an array of frames' };
  const header = bytes[0] as number;
  const isArray = (header >= 0x90 && header <= 0x9f) || header === 0xdc || header === 0xdd;
  if (!isArray) {
    const end = valueEnd(bytes, 0);
    if (end !== bytes.byteLength) return { ok: false, message: 'the body is not one MessagePack value' };
    return { ok: true, frames: [bytes], isBatch: false };
  }
  const count = containerSize(bytes, 0, header) as number;
  if (count === 0) return { ok: false, message: 'the array of frames is empty' };
  if (count > MAX_FRAME_BATCH) {
    return { ok: false, message: `a batch carries at most ${MAX_FRAME_BATCH} frames, not ${count}` };
  }
  const frames: Uint8Array[] = [];
  let position = containerHeaderLength(header);
  for (let index = 0; index < count; index++) {
    const end = valueEnd(bytes, position);
    if (end === undefined)
      return { ok: false, message: `frame ${index} of the batch is truncated or malformed` };
    frames.push(bytes.subarray(position, end));
    position = end;
  }
  if (position !== bytes.byteLength) return { ok: false, message: 'bytes follow the array of frames' };
  return { ok: true, frames, isBatch: true };
}

/** Encode frames, each already encoded, as one MessagePack array: the answer to a batch. */
export function encodeFrameBatch(frames: readonly Uint8Array[]): Uint8Array {
  const header =
    frames.length <= 0x0f
      ? [0x90 | frames.length]
      : frames.length <= 0xffff
        ? [0xdc, frames.length >> 8, frames.length & 0xff]
        : [
            0xdd,
            (frames.length >>> 24) & 0xff,
            (frames.length >> 16) & 0xff,
            (frames.length >> 8) & 0xff,
            frames.length & 0xff,
          ];
  let length = header.length;
  for (const frame of frames) length += frame.byteLength;
  const batch = new Uint8Array(length);
  batch.set(header, 0);
  let position = header.length;
  for (const frame of frames) {
    batch.set(frame, position);
    position += frame.byteLength;
  }
  return batch;
}

/** Where the MessagePack value at `start` ends; undefined when it is malformed or runs past the input. */
function valueEnd(bytes: Uint8Array, start: number): number | undefined {
  let position = start;
  // Values still to read; every value takes at least one byte, so this never outgrows the input.
  let remaining = 1;
  while (remaining > 0) {
    if (position >= bytes.byteLength) return undefined;
    remaining--;
    const header = bytes[position] as number;
    const children = containerSize(bytes, position, header);
    if (children !== undefined) {
      position += containerHeaderLength(header);
      remaining += children;
      if (remaining > bytes.byteLength - position) return undefined;
      continue;
    }
    const length = scalarLength(bytes, position, header);
    if (length === undefined) return undefined;
    position += length;
  }
  return position <= bytes.byteLength ? position : undefined;
}

const TYPE_KEY = [0xa4, 0x74, 0x79, 0x70, 0x65]; // fixstr "type"

/**
 * The `type` of an encoded frame, read from its top-level map without decoding it, or undefined
 * when the bytes are no map or name no string type. Lets a door refuse a frame type it does not
 * serve before anything acts on the frame; the frame is still validated in full by its decoder.
 */
export function peekFrameType(bytes: Uint8Array): string | undefined {
  const header = bytes[0];
  if (header === undefined) return undefined;
  const size = containerSize(bytes, 0, header);
  const isMap = (header >= 0x80 && header <= 0x8f) || header === 0xde || header === 0xdf;
  if (!isMap || size === undefined) return undefined;
  let position = containerHeaderLength(header);
  for (let entry = 0; entry < size / 2; entry++) {
    if (TYPE_KEY.every((byte, index) => bytes[position + index] === byte)) {
      return readFixOrStr8(bytes, position + TYPE_KEY.length);
    }
    const keyEnd = valueEnd(bytes, position);
    const valueStop = keyEnd === undefined ? undefined : valueEnd(bytes, keyEnd);
    if (valueStop === undefined) return undefined;
    position = valueStop;
  }
  return undefined;
}

/** A short string (fixstr or str 8) at `position`; frame types are short. */
function readFixOrStr8(bytes: Uint8Array, position: number): string | undefined {
  const header = bytes[position];
  if (header === undefined) return undefined;
  let start: number;
  let length: number;
  if (header >= 0xa0 && header <= 0xbf) {
    start = position + 1;
    length = header & 0x1f;
  } else if (header === 0xd9) {
    start = position + 2;
    length = bytes[position + 1] ?? 0;
  } else return undefined;
  if (start + length > bytes.byteLength) return undefined;
  let text = '';
  for (let index = start; index < start + length; index++)
    text += String.fromCharCode(bytes[index] as number);
  return text;
}
