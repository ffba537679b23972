import type { DeadLetterInfo, DeliveredMessage } from './schemas/message.js';

/** The fields of a delivered message that every delivery of it repeats: all but the three a delivery sets. */
export type DeliveredFields = Omit<DeliveredMessage, 'deliveryAttempt' | 'offset' | 'receiptHandle'>;

/**
 * A delivered message whose fixed fields ({@link DeliveredFields}) were encoded once, when the
 * broker stored the message (`packDeliveredFields`), so that a delivery writes them as one copied
 * slice followed by the three fields it sets: `deliveryAttempt`, `offset` and `receiptHandle`.
 * The frame writer knows this class; on the wire it is an ordinary delivered message, its keys in
 * the stored order with those three last.
 *
 * Every field is also an own property, so whoever reads the message (the RocketMQ gateway, the
 * HTTP API, a forwarding broker) sees a plain `DeliveredMessage`. The encoded bytes are private: a
 * spread or a copy of the message is a plain object that the writer encodes field by field, so a
 * copy that changed a field can never be written with the stale bytes.
 */
export class PackedDelivery implements DeliveredMessage {
  readonly messageId: string;
  readonly topic: string;
  declare readonly tag?: string;
  declare readonly keys?: string[];
  declare readonly messageGroup?: string;
  declare readonly properties?: Record<string, string>;
  readonly body: Uint8Array;
  readonly bornAt: number;
  declare readonly deadLetter?: DeadLetterInfo;
  readonly deliveryAttempt: number;
  readonly offset: number;
  readonly receiptHandle: string;
  /** The fixed fields as one MessagePack map of at most 9 entries (a fixmap), as stored. */
  readonly #fieldBytes: Uint8Array;

  /** @param fields what `fieldBytes` encodes, decoded: the two must agree (the store keeps them together). */
  constructor(
    fields: DeliveredFields,
    fieldBytes: Uint8Array,
    deliveryAttempt: number,
    offset: number,
    receiptHandle: string,
  ) {
    this.messageId = fields.messageId;
    this.topic = fields.topic;
    this.body = fields.body;
    this.bornAt = fields.bornAt;
    // Absent fields stay absent (the schema's fields are exact-optional), as on the wire.
    const self = this as { -readonly [K in keyof DeliveredFields]: DeliveredFields[K] };
    if (fields.tag !== undefined) self.tag = fields.tag;
    // Copies: a reader in this process that changed them would change neither the stored message
    // nor another delivery of it.
    if (fields.keys !== undefined) self.keys = [...fields.keys];
    if (fields.messageGroup !== undefined) self.messageGroup = fields.messageGroup;
    if (fields.properties !== undefined) self.properties = { ...fields.properties };
    if (fields.deadLetter !== undefined) self.deadLetter = fields.deadLetter;
    this.deliveryAttempt = deliveryAttempt;
    this.offset = offset;
    this.receiptHandle = receiptHandle;
    this.#fieldBytes = fieldBytes;
  }

  /** The encoded fixed fields, for the frame writer. */
  static fieldBytesOf(delivery: PackedDelivery): Uint8Array {
    return delivery.#fieldBytes;
  }
}
