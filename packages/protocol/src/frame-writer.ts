import { PackedDelivery } from './packed-delivery.js';

/**
 * A MessagePack writer for the frames that carry the traffic, byte for byte what the codec's
 * msgpackr writes with its options (codec.ts): objects as maps in key order, `undefined`
 * properties left out, map, array and string headers in their smallest form, integers of 32 bits
 * in their smallest form and every other number as float 64, bytes as `bin`.
 *
 * msgpackr's general path (checks per property for skipped values, extension lookups) costs
 * several times the bytes it writes for a `send` or `deliver` frame of small messages (about a
 * microsecond per delivered message); this one writes only
 * the kinds of values frames hold — plain objects, arrays, ASCII strings, numbers, booleans,
 * `null` and `Uint8Array`s (Node's Buffers included) — and gives up (`undefined`) at anything
 * else, for msgpackr to write. `frame-writer.test.ts` holds it to msgpackr's bytes on random frames.
 * One more kind is its own: a {@link PackedDelivery}, a delivered message whose fixed fields were
 * encoded when it was stored, written as those bytes and three fields (it decodes to the message
 * msgpackr's bytes of its fields would).
 *
 * A frame is written into one buffer kept for the next frame, and handed out as a copy of its
 * exact size: views of a shared slab would keep megabytes of it alive behind frames waiting to be
 * written, which V8 counts as external memory and collects for, more than the copy costs.
 */
export function writeFrame(frame: object): Uint8Array | undefined {
  position = 0;
  const written = writeValue(frame) ? slab.slice(0, position) : undefined;
  dropLargeSlab();
  return written;
}

/** Memory of `size` bytes for what {@link writeInto} wrote, the caller's to keep. */
export type ByteAllocator = (size: number) => Uint8Array;

/**
 * Write `value` as {@link writeFrame} does, into memory from `allocate` (Node's pooled Buffers, say,
 * where a new `ArrayBuffer` per value would cost more than the writing), `before` bytes into it:
 * the bytes before are the caller's to fill. `undefined` where {@link writeFrame} gives up.
 */
export function writeInto(value: object, before: number, allocate: ByteAllocator): Uint8Array | undefined {
  position = 0;
  let written: Uint8Array | undefined;
  if (writeValue(value)) {
    written = allocate(before + position);
    written.set(slab.subarray(0, position), before);
  }
  dropLargeSlab();
  return written;
}

/** A frame of large bodies grew the buffer: it is not kept for the small ones that follow. */
function dropLargeSlab(): void {
  if (slab.length > MAX_KEPT_BYTES) slab = new Uint8Array(0);
}

const INITIAL_BYTES = 64 * 1024;
const MAX_KEPT_BYTES = 1024 * 1024;

/** Allocated on first use: a process that never writes a frame by hand holds none. */
let slab = new Uint8Array(0);
let view = new DataView(slab.buffer);
/** Where the next byte of the frame being written goes. */
let position = 0;

/** Make room for `bytes` more: a larger buffer, with the frame written so far carried over. */
function reserve(bytes: number): void {
  if (position + bytes <= slab.length) return;
  const next = new Uint8Array(Math.max(INITIAL_BYTES, (position + bytes) * 2));
  next.set(slab.subarray(0, position));
  slab = next;
  view = new DataView(slab.buffer);
}

function writeValue(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
      return writeString(value);
    case 'number':
      writeNumber(value);
      return true;
    case 'boolean':
      reserve(1);
      slab[position++] = value ? 0xc3 : 0xc2;
      return true;
    case 'object':
      if (value === null) {
        reserve(1);
        slab[position++] = 0xc0;
        return true;
      }
      if (value.constructor === Object) return writeMap(value as Record<string, unknown>);
      if (value.constructor === PackedDelivery) return writePackedDelivery(value as PackedDelivery);
      if (value.constructor === Array) return writeArray(value as unknown[]);
      if (value instanceof Uint8Array) {
        writeBytes(value);
        return true;
      }
      return false;
    default:
      return false;
  }
}

/**
 * A map whose keys come in an order known beforehand — a `send` frame's plain message, a delivered
 * message — has its key names written as bytes encoded once, not character by character.
 */
interface Shape {
  readonly keys: readonly string[];
  readonly keyBytes: readonly (readonly number[])[];
}

function shape(keys: readonly string[]): Shape {
  return {
    keys,
    keyBytes: keys.map((key) => [0xa0 | key.length, ...Array.from(key, (char) => char.charCodeAt(0))]),
  };
}

/** A delivered message as the broker builds it, in its key order, `tag` last when it has one. */
const DELIVERED_KEYS = ['messageId', 'topic', 'body', 'bornAt', 'deliveryAttempt', 'offset', 'receiptHandle'];
const SHAPES: readonly Shape[] = [
  shape(['messageId', 'topic', 'body', 'bornAt']),
  shape(DELIVERED_KEYS),
  shape([...DELIVERED_KEYS, 'tag']),
];

/**
 * The shape whose keys are exactly the map's keys, in order, none of them `undefined`. (A plain
 * object's `for…in` is its own keys: nothing enumerable is inherited from `Object.prototype`.)
 */
function shapeOf(map: Record<string, unknown>): Shape | undefined {
  for (const candidate of SHAPES) {
    const { keys } = candidate;
    let index = 0;
    let matches = true;
    for (const key in map) {
      if (key !== keys[index] || map[key] === undefined) {
        matches = false;
        break;
      }
      index++;
    }
    if (matches && index === keys.length) return candidate;
  }
  return undefined;
}

function writeMap(map: Record<string, unknown>): boolean {
  const known = shapeOf(map);
  return known === undefined ? writeAnyMap(map) : writeShapedMap(map, known);
}

function writeShapedMap(map: Record<string, unknown>, shape: Shape): boolean {
  reserve(1);
  slab[position++] = 0x80 | shape.keys.length;
  return writeShapedEntries(map, shape);
}

/** A map's entries, for the keys of `shape`, without the map's header. */
function writeShapedEntries(map: Record<string, unknown>, { keys, keyBytes }: Shape): boolean {
  for (let index = 0; index < keys.length; index++) {
    const bytes = keyBytes[index] as readonly number[];
    reserve(bytes.length);
    const target = slab;
    for (let at = 0; at < bytes.length; at++) target[position + at] = bytes[at] as number;
    position += bytes.length;
    if (!writeValue(map[keys[index] as string])) return false;
  }
  return true;
}

/** What a delivery sets in a {@link PackedDelivery}, written after its stored fields. */
const PER_DELIVERY = shape(['deliveryAttempt', 'offset', 'receiptHandle']);

/**
 * A delivered message whose fixed fields were encoded when it was stored: their map copied whole,
 * its header counting three more entries, then those three. The stored map is a fixmap of at most
 * 9 entries (`packDeliveredFields`), so the count stays within a fixmap's 15.
 */
function writePackedDelivery(delivery: PackedDelivery): boolean {
  const fields = PackedDelivery.fieldBytesOf(delivery);
  reserve(fields.length);
  slab.set(fields, position);
  slab[position] = (fields[0] as number) + PER_DELIVERY.keys.length;
  position += fields.length;
  return writeShapedEntries(delivery as unknown as Record<string, unknown>, PER_DELIVERY);
}

function writeAnyMap(map: Record<string, unknown>): boolean {
  // A fixmap header, counted while the entries are written and widened in the rare map of 16 or
  // more.
  reserve(1);
  const header = position++;
  let size = 0;
  for (const key in map) {
    if (!Object.hasOwn(map, key)) continue;
    const entry = map[key];
    if (entry === undefined) continue;
    if (!writeString(key) || !writeValue(entry)) return false;
    size++;
  }
  if (size < 0x10) {
    slab[header] = 0x80 | size;
    return true;
  }
  const extra = size < 0x10000 ? 2 : 4;
  reserve(extra);
  const at = header;
  slab.copyWithin(at + 1 + extra, at + 1, position);
  position += extra;
  if (extra === 2) {
    slab[at] = 0xde;
    slab[at + 1] = size >> 8;
    slab[at + 2] = size & 0xff;
  } else {
    slab[at] = 0xdf;
    view.setUint32(at + 1, size);
  }
  return true;
}

function writeArray(array: readonly unknown[]): boolean {
  writeHeader(array.length, 0x90, 0xdc);
  // msgpackr writes an `undefined` element as an extension; frames never hold one.
  for (const element of array) if (element === undefined || !writeValue(element)) return false;
  return true;
}

/** A map's or an array's header: fix (up to 15 entries), 16-bit or 32-bit count. */
function writeHeader(count: number, fix: number, sixteen: number): void {
  reserve(5);
  if (count < 0x10) {
    slab[position++] = fix | count;
  } else if (count < 0x10000) {
    slab[position++] = sixteen;
    slab[position++] = count >> 8;
    slab[position++] = count & 0xff;
  } else {
    slab[position++] = sixteen + 1;
    view.setUint32(position, count);
    position += 4;
  }
}

function writeNumber(value: number): void {
  reserve(9);
  if (value >>> 0 === value) {
    if (value < 0x80) {
      slab[position++] = value;
    } else if (value < 0x100) {
      slab[position++] = 0xcc;
      slab[position++] = value;
    } else if (value < 0x10000) {
      slab[position++] = 0xcd;
      slab[position++] = value >> 8;
      slab[position++] = value & 0xff;
    } else {
      slab[position++] = 0xce;
      view.setUint32(position, value);
      position += 4;
    }
  } else if (value >> 0 === value) {
    if (value >= -0x20) {
      slab[position++] = 0x100 + value;
    } else if (value >= -0x80) {
      slab[position++] = 0xd0;
      slab[position++] = value + 0x100;
    } else if (value >= -0x8000) {
      slab[position++] = 0xd1;
      view.setInt16(position, value);
      position += 2;
    } else {
      slab[position++] = 0xd2;
      view.setInt32(position, value);
      position += 4;
    }
  } else {
    slab[position++] = 0xcb;
    view.setFloat64(position, value);
    position += 8;
  }
}

function writeBytes(bytes: Uint8Array): void {
  const length = bytes.byteLength;
  reserve(length + 5);
  if (length < 0x100) {
    slab[position++] = 0xc4;
    slab[position++] = length;
  } else if (length < 0x10000) {
    slab[position++] = 0xc5;
    slab[position++] = length >> 8;
    slab[position++] = length & 0xff;
  } else {
    slab[position++] = 0xc6;
    view.setUint32(position, length);
    position += 4;
  }
  slab.set(bytes, position);
  position += length;
}

/**
 * An ASCII string (topics, ids, keys…); `false` for any other, left to msgpackr, which writes a
 * lone surrogate differently in short and long strings.
 */
function writeString(text: string): boolean {
  const length = text.length;
  reserve(length + 5);
  const target = slab;
  const headerBytes = length < 0x20 ? 1 : length < 0x100 ? 2 : length < 0x10000 ? 3 : 5;
  const from = position + headerBytes;
  for (let index = 0; index < length; index++) {
    const unit = text.charCodeAt(index);
    if (unit >= 0x80) return false;
    target[from + index] = unit;
  }
  if (headerBytes === 1) {
    target[position] = 0xa0 | length;
  } else if (headerBytes === 2) {
    target[position] = 0xd9;
    target[position + 1] = length;
  } else if (headerBytes === 3) {
    target[position] = 0xda;
    target[position + 1] = length >> 8;
    target[position + 2] = length & 0xff;
  } else {
    target[position] = 0xdb;
    view.setUint32(position + 1, length);
  }
  position = from + length;
  return true;
}
