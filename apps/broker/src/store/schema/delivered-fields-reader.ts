import type { DeliveredFields } from '@ricochet/protocol';
import { float64At, uint16At, uint32At, viewOf } from './record-bytes.js';

/**
 * The delivered fields of the common message, read without a general MessagePack decoder: a map
 * of `messageId`, `topic`, `body`, `bornAt` and maybe `tag` and `messageGroup`, as
 * `packDeliveredFields` writes them. `undefined` for any other map (keys, properties, a DLQ
 * copy's details), which msgpackr then reads. A delivery reads every stored message it sends, and
 * msgpackr's general path (a key string per entry, an object grown key by key) cost more than
 * the delivery's encoding saved. `topic`, when the caller knows it, is taken instead of decoded.
 */
export function readCommonFields(
  bytes: Uint8Array,
  start: number,
  topic: string | undefined,
): Mutable<DeliveredFields> | undefined {
  const header = bytes[start] as number;
  if ((header & 0xf0) !== 0x80) return undefined;
  const reader = { bytes, at: start + 1 };
  const fields = { messageId: '', topic: topic ?? '', body: EMPTY, bornAt: 0 } as Mutable<DeliveredFields>;
  for (let entry = header & 0x0f; entry > 0; entry--) {
    const keyHeader = bytes[reader.at] as number;
    if ((keyHeader & 0xe0) !== 0xa0) return undefined;
    const keyLength = keyHeader & 0x1f;
    // Each key this reader takes is told by its length and first letter ('body' and 'keys' share a length).
    const first = bytes[reader.at + 1];
    reader.at += 1 + keyLength;
    if (keyLength === 9 && first === CHAR_M) {
      const text = readText(reader);
      if (text === undefined) return undefined;
      fields.messageId = text;
    } else if (keyLength === 5 && first === CHAR_T) {
      if (topic === undefined) {
        const text = readText(reader);
        if (text === undefined) return undefined;
        fields.topic = text;
      } else if (!skipText(reader)) return undefined;
    } else if (keyLength === 4 && first === CHAR_B) {
      const body = readBin(reader);
      if (body === undefined) return undefined;
      fields.body = body;
    } else if (keyLength === 6 && first === CHAR_B) {
      const bornAt = readNumber(reader);
      if (bornAt === undefined) return undefined;
      fields.bornAt = bornAt;
    } else if (keyLength === 3 && first === CHAR_T) {
      const text = readText(reader);
      if (text === undefined) return undefined;
      fields.tag = text;
    } else if (keyLength === 12 && first === CHAR_M) {
      const text = readText(reader);
      if (text === undefined) return undefined;
      fields.messageGroup = text;
    } else {
      return undefined;
    }
  }
  return fields;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A position in the bytes being read. */
interface Reader {
  readonly bytes: Uint8Array;
  at: number;
}

const EMPTY = new Uint8Array(0);
const CHAR_B = 0x62;
const CHAR_M = 0x6d;
const CHAR_T = 0x74;
const utf8 = new TextDecoder();

/** UTF-8 text out of the bytes: by Node's Buffer (what the store reads), natively, or else by TextDecoder. */
function textOf(bytes: Uint8Array, start: number, length: number): string {
  return bytes instanceof Buffer
    ? bytes.toString('utf8', start, start + length)
    : utf8.decode(bytes.subarray(start, start + length));
}

/** A MessagePack string (fixstr, str 8, 16 or 32), or `undefined` for any other value. */
function readText(reader: Reader): string | undefined {
  const start = textStart(reader);
  if (start === undefined) return undefined;
  return textOf(reader.bytes, start, reader.at - start);
}

/** Past a MessagePack string; `false` at any other value. */
function skipText(reader: Reader): boolean {
  return textStart(reader) !== undefined;
}

/** Where the string at the reader's position begins; the reader is moved past it. */
function textStart(reader: Reader): number | undefined {
  const header = reader.bytes[reader.at] as number;
  if ((header & 0xe0) !== 0xa0) return sizedStart(reader, STR_8);
  const start = reader.at + 1;
  reader.at = start + (header & 0x1f);
  return start;
}

/** A MessagePack `bin` (8, 16 or 32) as a view of the bytes, or `undefined` for any other value. */
function readBin(reader: Reader): Uint8Array | undefined {
  const start = sizedStart(reader, BIN_8);
  return start === undefined ? undefined : viewOf(reader.bytes, start, reader.at - start);
}

/** The first byte of the 8-bit-length form of strings and of bins; the 16- and 32-bit forms follow it. */
const STR_8 = 0xd9;
const BIN_8 = 0xc4;

/**
 * Where the string or bin at the reader's position begins, in the form of `code8` (its 8-, 16- or
 * 32-bit length); the reader is moved past it. `undefined` for any other value.
 */
function sizedStart(reader: Reader, code8: number): number | undefined {
  const { bytes, at } = reader;
  const header = bytes[at] as number;
  let length: number;
  let start: number;
  if (header === code8) {
    length = bytes[at + 1] as number;
    start = at + 2;
  } else if (header === code8 + 1) {
    length = uint16At(bytes, at + 1);
    start = at + 3;
  } else if (header === code8 + 2) {
    length = uint32At(bytes, at + 1);
    start = at + 5;
  } else {
    return undefined;
  }
  reader.at = start + length;
  return start;
}

/** A MessagePack number in the forms the frame writer and msgpackr write a timestamp in, or `undefined`. */
function readNumber(reader: Reader): number | undefined {
  const { bytes, at } = reader;
  const header = bytes[at] as number;
  if (header < 0x80) {
    reader.at += 1;
    return header;
  }
  if (header === 0xcb) {
    reader.at += 9;
    return float64At(bytes, at + 1);
  }
  if (header === 0xce) {
    reader.at += 5;
    return uint32At(bytes, at + 1);
  }
  if (header === 0xcd) {
    reader.at += 3;
    return uint16At(bytes, at + 1);
  }
  if (header === 0xcc) {
    reader.at += 2;
    return bytes[at + 1];
  }
  return undefined;
}
