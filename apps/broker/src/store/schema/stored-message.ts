import type { DeadLetterCause } from '@ricochet/core';
import {
  type DeadLetterInfo,
  type DeliveredFields,
  packDeliveredFields,
  unpackDeliveredFields,
} from '@ricochet/protocol';
import { Packr, unpack } from 'msgpackr';
import type { DeadLetterRecord, StoredMessage } from '../records.js';
import { readCommonFields } from './delivered-fields-reader.js';
import type { AllFields } from './field-table.js';
import { float64At, setFloat64At, setUint32At, uint32At, viewOf } from './record-bytes.js';

/**
 * A message as layout 2 stores it: the bytes it is delivered in, beside the few fields only the
 * store keeps. A delivery copies those bytes (`PackedDelivery`) and writes only what it sets itself:
 * the attempt, the offset and the receipt handle.
 *
 * A store keeps it as one MessagePack value, a `bin` (a stored message of layout 1 is a map, so the
 * two are told apart by their type and read side by side), the record inside:
 *
 * | bytes | what |
 * |---|---|
 * | 5 | the `bin`'s header: `0xc6` (always the 32-bit length form, written before the record's length is known) and the length |
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
/** MessagePack's `bin 32`, the stored value's type. */
const BIN_32 = 0xc6;
/** The `bin`'s header, the format, the flags, the offset and `storedAt`. */
const FIXED_HEADER_BYTES = 23;

/** Whether a stored value holds a layout 2 record: a stored message of layout 1 is a MessagePack map. */
export function isStoredMessageRecord(value: Uint8Array): boolean {
  return value[0] === BIN_32 && value[5] === RECORD_FORMAT;
}

/** The dead-letter fields a consumer never receives: the store's own. */
interface StoredDeadLetterPart {
  readonly group: string;
  readonly originOffset: number;
  readonly lastLease: number;
  readonly redrivenAt?: number;
}

/**
 * Memory for a record: a slice of Node's pooled blocks (under 4 KiB), where a new `ArrayBuffer` per
 * message would cost several times the encoding.
 */
const pooled = (size: number): Uint8Array => Buffer.allocUnsafe(size);

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
 * A message with its stored value (layout 2): every field of {@link StoredMessage} as an own
 * property, and the value kept (privately, so a spread copy, which may change a field, never
 * carries it) for a store to write as it is and for the deliveries of the message to copy its
 * delivered bytes. Read from a value ({@link decodeStoredMessage}) or made with one
 * ({@link packStoredMessage}).
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
  readonly #value: Uint8Array;
  readonly #delivered: DeliveredFields;
  readonly #deliveredAt: number;
  #deliveredBytes: Uint8Array | undefined;

  /** @param delivered the fields the end of `value` (from `deliveredAt` on) encodes, decoded. */
  constructor(
    value: Uint8Array,
    delivered: DeliveredFields,
    deliveredAt: number,
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
    this.#value = value;
    this.#delivered = delivered;
    this.#deliveredAt = deliveredAt;
  }

  /** The stored value the message was read from or made with. */
  static valueOf(message: PackedStoredMessage): Uint8Array {
    return message.#value;
  }

  /** The fields every delivery of the message carries, decoded; for `PackedDelivery`. */
  static deliveredFieldsOf(message: PackedStoredMessage): DeliveredFields {
    return message.#delivered;
  }

  /**
   * The same fields as the record stores them: one MessagePack map; for `PackedDelivery`. A view
   * made at the first delivery: a message only stored never needs one.
   */
  static deliveredBytesOf(message: PackedStoredMessage): Uint8Array {
    if (message.#deliveredBytes === undefined) {
      const value = message.#value;
      message.#deliveredBytes = viewOf(value, message.#deliveredAt, value.length - message.#deliveredAt);
    }
    return message.#deliveredBytes;
  }
}

/** A message's stored value (layout 2): the one it was read from or made with, or else a new one. */
export function storedValueOf(message: StoredMessage): Uint8Array {
  return message instanceof PackedStoredMessage
    ? PackedStoredMessage.valueOf(message)
    : encode(message).value;
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
 * The message with its stored value, encoded once: a store writes the value as it is (a PostgreSQL
 * store in its row and its local copy), and the deliveries of the message copy its delivered bytes.
 */
export function packStoredMessage(message: StoredMessage): PackedStoredMessage {
  const { value, delivered, deliveredAt } = encode(message);
  return new PackedStoredMessage(
    value,
    delivered,
    deliveredAt,
    message.offset,
    message.storedAt,
    message.deliverAt,
    message.deadLetter,
  );
}

/** A message's stored value, with its delivered fields and where their bytes begin. */
function encode(message: StoredMessage): {
  value: Uint8Array;
  delivered: DeliveredFields;
  deliveredAt: number;
} {
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
  const deliverAt = message.deliverAt;
  const headerBytes =
    FIXED_HEADER_BYTES +
    (deliverAt === undefined ? 0 : 8) +
    (storedPart === undefined ? 0 : 4 + storedPart.length);
  // The delivered fields written after room for the header, in one piece of Node's pooled memory.
  const value = packDeliveredFields(delivered, { before: headerBytes, allocate: pooled });
  value[0] = BIN_32;
  setUint32At(value, 1, value.length - 5);
  value[5] = RECORD_FORMAT;
  value[6] =
    (deliverAt === undefined ? 0 : HAS_DELIVER_AT) | (storedPart === undefined ? 0 : HAS_DEAD_LETTER);
  setFloat64At(value, 7, message.offset);
  setFloat64At(value, 15, message.storedAt);
  let at = FIXED_HEADER_BYTES;
  if (deliverAt !== undefined) {
    setFloat64At(value, at, deliverAt);
    at += 8;
  }
  if (storedPart !== undefined) {
    setUint32At(value, at, storedPart.length);
    value.set(storedPart, at + 4);
    at += 4 + storedPart.length;
  }
  return { value, delivered, deliveredAt: at };
}

/**
 * The message a stored value of layout 2 holds. `topic`, when the caller knows it (the embedded
 * store's key names it), is not decoded again.
 */
export function decodeStoredMessage(value: Uint8Array, topic?: string): PackedStoredMessage {
  if (!isStoredMessageRecord(value)) {
    throw new Error(
      `not a stored message of layout 2 (it begins ${value[0]}, ${value[5]}): written by a newer broker?`,
    );
  }
  const flags = value[6] as number;
  const offset = float64At(value, 7);
  const storedAt = float64At(value, 15);
  let at = FIXED_HEADER_BYTES;
  let deliverAt: number | undefined;
  if ((flags & HAS_DELIVER_AT) !== 0) {
    deliverAt = float64At(value, at);
    at += 8;
  }
  let storedPart: StoredDeadLetterPart | undefined;
  if ((flags & HAS_DEAD_LETTER) !== 0) {
    const length = uint32At(value, at);
    storedPart = unpack(value.subarray(at + 4, at + 4 + length)) as StoredDeadLetterPart;
    at += 4 + length;
  }
  const delivered =
    readCommonFields(value, at, topic) ?? unpackDeliveredFields(viewOf(value, at, value.length - at));
  let deadLetter: DeadLetterRecord | undefined;
  if (storedPart !== undefined && delivered.deadLetter !== undefined) {
    deadLetter = deadLetterRecordOf(delivered.deadLetter, storedPart);
  }
  return new PackedStoredMessage(value, delivered, at, offset, storedAt, deliverAt, deadLetter);
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
