import type { DeadLetterCause } from '@ricochet/core';
import {
  type DeadLetterInfo,
  type DeliveredFields,
  packDeliveredFields,
  unpackDeliveredFields,
} from '@ricochet/protocol';
import { Packr, unpack } from 'msgpackr';
import type { DeadLetterRecord, StoredMessage } from '../records.js';
import { float64At, readCommonFields, uint32At, viewOf } from './delivered-fields-reader.js';
import type { AllFields } from './field-table.js';

/**
 * A message as layout 2 stores it: the bytes it is delivered in, beside the few fields only the
 * store keeps. A delivery copies those bytes (`PackedDelivery`) and writes only what it sets itself:
 * the attempt, the offset and the receipt handle.
 *
 * The record, in the `messages` database as one MessagePack `bin` (a layout 1 record is a map, so
 * the two are told apart by their type and read side by side):
 *
 * | bytes | what |
 * |---|---|
 * | 1 | {@link RECORD_FORMAT}, 2 |
 * | 1 | flags: {@link HAS_DELIVER_AT}, {@link HAS_DEAD_LETTER} |
 * | 8 | `offset`, a float 64, big-endian |
 * | 8 | `storedAt` likewise |
 * | 8 | `deliverAt` likewise, with {@link HAS_DELIVER_AT} |
 * | 4 + n | with {@link HAS_DEAD_LETTER}: n, then a MessagePack map of the dead-letter fields a delivery does not carry ({@link StoredDeadLetterPart}) |
 * | the rest | the delivered fields: one MessagePack map (`packDeliveredFields`) |
 *
 * A delivery's three fields are not stored. The record names its topic and offset although the
 * embedded store's key holds them too: a PostgreSQL store keeps the same record in its rows, and a
 * standby reads it from its owner's feed, with no key beside it.
 */
export const RECORD_FORMAT = 2;
const HAS_DELIVER_AT = 1;
const HAS_DEAD_LETTER = 2;
/** The format, the flags, the offset and `storedAt`. */
const FIXED_HEADER_BYTES = 18;

/** Whether a stored value is a layout 2 record: a stored message of layout 1 is a MessagePack map, never this byte. */
export function isStoredMessageRecord(value: Uint8Array): boolean {
  return value[0] === RECORD_FORMAT;
}

/** The dead-letter fields a consumer never receives: the store's own. */
interface StoredDeadLetterPart {
  readonly group: string;
  readonly originOffset: number;
  readonly lastLease: number;
  readonly redrivenAt?: number;
}

/** Plain MessagePack for the dead-letter part: maps, no extensions, `undefined` fields left out. */
const deadLetterPacker = new Packr({ useRecords: false, variableMapSize: true });

/** Where each field of a stored message goes; compiles only while it lists all of them. */
export const STORED_MESSAGE_FIELDS = {
  message: {
    messageId: 'delivered',
    topic: 'delivered',
    offset: 'header',
    tag: 'delivered',
    keys: 'delivered',
    messageGroup: 'delivered',
    properties: 'delivered',
    body: 'delivered',
    bornAt: 'delivered',
    storedAt: 'header',
    deliverAt: 'header',
    deadLetter: 'both',
  },
  deadLetter: {
    group: 'stored',
    originTopic: 'delivered',
    originOffset: 'stored',
    attempts: 'delivered',
    reason: 'delivered',
    deadLetteredAt: 'delivered',
    cause: 'delivered',
    firstFailedAt: 'delivered',
    lastLease: 'stored',
    redrivenAt: 'stored',
  },
} as const satisfies {
  readonly message: {
    readonly [K in keyof AllFields<StoredMessage>]: 'delivered' | 'header' | 'both';
  };
  readonly deadLetter: { readonly [K in keyof AllFields<DeadLetterRecord>]: 'delivered' | 'stored' };
};

/**
 * A message with its layout 2 record: every field of {@link StoredMessage} as an own property, and
 * the record kept (privately, so a spread copy, which may change a field, never carries it) for the
 * store to write as it is and for the deliveries of the message to copy its delivered bytes.
 * Read from a record ({@link decodeStoredMessage}) or made with one ({@link packStoredMessage}).
 */
export class PackedStoredMessage implements StoredMessage {
  readonly messageId: string;
  readonly topic: string;
  readonly offset: number;
  declare readonly tag?: string;
  declare readonly keys?: readonly string[];
  declare readonly messageGroup?: string;
  declare readonly properties?: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  readonly bornAt: number;
  readonly storedAt: number;
  declare readonly deliverAt?: number;
  declare readonly deadLetter?: DeadLetterRecord;
  readonly #record: Uint8Array;
  readonly #delivered: DeliveredFields;
  readonly #deliveredBytes: Uint8Array;

  /** @param delivered the fields `deliveredBytes` (the end of `record`) encodes, decoded. */
  constructor(
    record: Uint8Array,
    delivered: DeliveredFields,
    deliveredBytes: Uint8Array,
    offset: number,
    storedAt: number,
    deliverAt: number | undefined,
    deadLetter: DeadLetterRecord | undefined,
  ) {
    this.messageId = delivered.messageId;
    this.topic = delivered.topic;
    this.offset = offset;
    const self = this as { -readonly [K in keyof StoredMessage]: StoredMessage[K] };
    if (delivered.tag !== undefined) self.tag = delivered.tag;
    if (delivered.keys !== undefined) self.keys = delivered.keys;
    if (delivered.messageGroup !== undefined) self.messageGroup = delivered.messageGroup;
    if (delivered.properties !== undefined) self.properties = delivered.properties;
    this.body = delivered.body;
    this.bornAt = delivered.bornAt;
    this.storedAt = storedAt;
    if (deliverAt !== undefined) self.deliverAt = deliverAt;
    if (deadLetter !== undefined) self.deadLetter = deadLetter;
    this.#record = record;
    this.#delivered = delivered;
    this.#deliveredBytes = deliveredBytes;
  }

  /** The record the message was read from or made with. */
  static recordOf(message: PackedStoredMessage): Uint8Array {
    return message.#record;
  }

  /** The fields every delivery of the message carries, decoded; for `PackedDelivery`. */
  static deliveredFieldsOf(message: PackedStoredMessage): DeliveredFields {
    return message.#delivered;
  }

  /** The same fields as the record stores them: one MessagePack map; for `PackedDelivery`. */
  static deliveredBytesOf(message: PackedStoredMessage): Uint8Array {
    return message.#deliveredBytes;
  }
}

/** A message's layout 2 record: the one it was read from or made with, or else a new one. */
export function storedRecordOf(message: StoredMessage): Uint8Array {
  return message instanceof PackedStoredMessage
    ? PackedStoredMessage.recordOf(message)
    : PackedStoredMessage.recordOf(packStoredMessage(message));
}

/** The dead-letter details a consumer receives (D1, X6), as `toDeliveredMessage` has always built them. */
export function deliveredDeadLetter(record: DeadLetterRecord): DeadLetterInfo {
  const { originTopic, attempts, reason, deadLetteredAt, cause, firstFailedAt } = record;
  const info: { -readonly [K in keyof DeadLetterInfo]: DeadLetterInfo[K] } = {
    originTopic,
    attempts,
    reason,
    deadLetteredAt,
  };
  if (cause !== undefined) info.cause = cause;
  if (firstFailedAt !== undefined) info.firstFailedAt = firstFailedAt;
  return info;
}

/**
 * The message with its layout 2 record, encoded once: a store writes the record as it is, and the
 * deliveries of the message copy its delivered bytes.
 */
export function packStoredMessage(message: StoredMessage): PackedStoredMessage {
  const delivered: { -readonly [K in keyof DeliveredFields]: DeliveredFields[K] } = {
    messageId: message.messageId,
    topic: message.topic,
    body: message.body,
    bornAt: message.bornAt,
  };
  if (message.tag !== undefined) delivered.tag = message.tag;
  if (message.keys !== undefined) delivered.keys = message.keys as string[];
  if (message.messageGroup !== undefined) delivered.messageGroup = message.messageGroup;
  if (message.properties !== undefined) delivered.properties = message.properties;
  const deadLetter = message.deadLetter;
  let storedPart: Uint8Array | undefined;
  if (deadLetter !== undefined) {
    delivered.deadLetter = deliveredDeadLetter(deadLetter);
    const { group, originOffset, lastLease, redrivenAt } = deadLetter;
    const part: StoredDeadLetterPart =
      redrivenAt === undefined
        ? { group, originOffset, lastLease }
        : { group, originOffset, lastLease, redrivenAt };
    storedPart = deadLetterPacker.pack(part);
  }
  const fields = packDeliveredFields(delivered);
  const deliverAt = message.deliverAt;
  const headerBytes =
    FIXED_HEADER_BYTES +
    (deliverAt === undefined ? 0 : 8) +
    (storedPart === undefined ? 0 : 4 + storedPart.length);
  const record = new Uint8Array(headerBytes + fields.length);
  const view = new DataView(record.buffer);
  record[0] = RECORD_FORMAT;
  record[1] =
    (deliverAt === undefined ? 0 : HAS_DELIVER_AT) | (storedPart === undefined ? 0 : HAS_DEAD_LETTER);
  view.setFloat64(2, message.offset);
  view.setFloat64(10, message.storedAt);
  let at = FIXED_HEADER_BYTES;
  if (deliverAt !== undefined) {
    view.setFloat64(at, deliverAt);
    at += 8;
  }
  if (storedPart !== undefined) {
    view.setUint32(at, storedPart.length);
    record.set(storedPart, at + 4);
    at += 4 + storedPart.length;
  }
  record.set(fields, at);
  return new PackedStoredMessage(
    record,
    delivered,
    record.subarray(at),
    message.offset,
    message.storedAt,
    deliverAt,
    deadLetter,
  );
}

/**
 * The message a layout 2 record holds. `topic`, when the caller knows it (the embedded store's key
 * names it), is not decoded again.
 */
export function decodeStoredMessage(record: Uint8Array, topic?: string): PackedStoredMessage {
  if (record[0] !== RECORD_FORMAT) {
    throw new Error(
      `a stored message record of format ${record[0]}, not ${RECORD_FORMAT}: written by a newer broker?`,
    );
  }
  const flags = record[1] as number;
  const offset = float64At(record, 2);
  const storedAt = float64At(record, 10);
  let at = FIXED_HEADER_BYTES;
  let deliverAt: number | undefined;
  if ((flags & HAS_DELIVER_AT) !== 0) {
    deliverAt = float64At(record, at);
    at += 8;
  }
  let storedPart: StoredDeadLetterPart | undefined;
  if ((flags & HAS_DEAD_LETTER) !== 0) {
    const length = uint32At(record, at);
    storedPart = unpack(record.subarray(at + 4, at + 4 + length)) as StoredDeadLetterPart;
    at += 4 + length;
  }
  const bytes = viewOf(record, at, record.length - at);
  const delivered = readCommonFields(record, at, topic) ?? unpackDeliveredFields(bytes);
  let deadLetter: DeadLetterRecord | undefined;
  if (storedPart !== undefined && delivered.deadLetter !== undefined) {
    deadLetter = deadLetterRecordOf(delivered.deadLetter, storedPart);
  }
  return new PackedStoredMessage(record, delivered, bytes, offset, storedAt, deliverAt, deadLetter);
}

/** A stored dead-letter record from its two halves, in the order layout 1 stored its fields. */
function deadLetterRecordOf(info: DeadLetterInfo, part: StoredDeadLetterPart): DeadLetterRecord {
  const record: { -readonly [K in keyof DeadLetterRecord]: DeadLetterRecord[K] } = {
    group: part.group,
    originTopic: info.originTopic,
    originOffset: part.originOffset,
    attempts: info.attempts,
    reason: info.reason,
    deadLetteredAt: info.deadLetteredAt,
    lastLease: part.lastLease,
  };
  // The record holds what this store wrote: one of core's causes.
  if (info.cause !== undefined) record.cause = info.cause as DeadLetterCause;
  if (info.firstFailedAt !== undefined) record.firstFailedAt = info.firstFailedAt;
  if (part.redrivenAt !== undefined) record.redrivenAt = part.redrivenAt;
  return record;
}
