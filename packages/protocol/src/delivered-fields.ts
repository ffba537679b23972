import { packWithMsgpackr, unpackTrusted } from './codec.js';
import { type ByteAllocator, writeInto } from './frame-writer.js';
import type { DeliveredFields } from './packed-delivery.js';

/**
 * A delivered message's fixed fields as one MessagePack map, written once (when a broker stores
 * the message) for every delivery of it to copy (`PackedDelivery`). Its keys come in the order
 * `toDeliveredMessage` has always written them, absent fields left out: at most 9 entries, a
 * fixmap. The same bytes msgpackr writes for the same fields in that order.
 *
 * With `room`, the map is written `room.before` bytes into memory from `room.allocate`, for the
 * caller to put what it stores beside the map in front of it, with no copy.
 */
export function packDeliveredFields(fields: DeliveredFields, room: PackingRoom = NO_ROOM): Uint8Array {
  // Built in key order, field by field: the map's keys are the object's keys, in insertion order.
  const ordered: Record<string, unknown> = {
    messageId: fields.messageId,
    topic: fields.topic,
    body: fields.body,
    bornAt: fields.bornAt,
  };
  if (fields.tag !== undefined) ordered.tag = fields.tag;
  if (fields.keys !== undefined) ordered.keys = fields.keys;
  if (fields.messageGroup !== undefined) ordered.messageGroup = fields.messageGroup;
  if (fields.properties !== undefined) ordered.properties = fields.properties;
  if (fields.deadLetter !== undefined) ordered.deadLetter = fields.deadLetter;
  // The hand writer takes ASCII strings only; msgpackr writes the others the same way.
  const written = writeInto(ordered, room.before, room.allocate);
  if (written !== undefined) return written;
  const packed = packWithMsgpackr(ordered);
  const placed = room.allocate(room.before + packed.length);
  placed.set(packed, room.before);
  return placed;
}

/** Where {@link packDeliveredFields} writes: `before` bytes into memory from `allocate`. */
export interface PackingRoom {
  readonly before: number;
  readonly allocate: ByteAllocator;
}

const NO_ROOM: PackingRoom = { before: 0, allocate: (size) => new Uint8Array(size) };

/**
 * The fields {@link packDeliveredFields} wrote. The bytes are trusted (the broker's own store):
 * nothing is checked. `body` is a view into `bytes`.
 */
export function unpackDeliveredFields(bytes: Uint8Array): DeliveredFields {
  return unpackTrusted(bytes) as DeliveredFields;
}
