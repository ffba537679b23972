import { packWithMsgpackr, unpackTrusted } from './codec.js';
import { writeFrame } from './frame-writer.js';
import type { DeliveredFields } from './packed-delivery.js';

/**
 * A delivered message's fixed fields as one MessagePack map, written once (when a broker stores
 * the message) for every delivery of it to copy (`PackedDelivery`). Its keys come in the order
 * `toDeliveredMessage` has always written them, absent fields left out: at most 9 entries, a
 * fixmap. The same bytes msgpackr writes for the same fields in that order.
 */
export function packDeliveredFields(fields: DeliveredFields): Uint8Array {
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
  return writeFrame(ordered) ?? packWithMsgpackr(ordered);
}

/**
 * The fields {@link packDeliveredFields} wrote. The bytes are trusted (the broker's own store):
 * nothing is checked. `body` is a view into `bytes`.
 */
export function unpackDeliveredFields(bytes: Uint8Array): DeliveredFields {
  return unpackTrusted(bytes) as DeliveredFields;
}
