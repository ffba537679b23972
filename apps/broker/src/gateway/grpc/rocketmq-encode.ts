import { MESSAGE_PREFIX_BYTES } from './grpc-framing.js';
import type {
  AckMessageResultEntry,
  Duration,
  ReceiveMessageResponse,
  Resource,
  RocketCode,
  RocketMessage,
  RocketStatus,
  SendResultEntry,
  SystemProperties,
} from './rocketmq-schema.js';
import { OK_STATUS } from './rocketmq-status.js';
import { tagOf, tagsOf, WIRE_FIELDS } from './rocketmq-wire-fields.js';

/**
 * Encoders of the hot answers (`SendMessage`, `ReceiveMessage`'s frames, `AckMessage`), straight
 * from the handlers' shapes into bytes, without proto-loader's `fromObject` copy of each answer.
 * The OK status, in nearly every answer, is encoded once and spliced in as it is (an embedded
 * message is written as length-prefixed bytes, so prebuilt bytes go in whole). They write with a
 * {@link Writer} of their own, into one reused buffer: protobufjs's writer queued an operation
 * object per field and a 64-bit object per int64, which cost more than the bytes on answers
 * made once per message.
 */

/** Numbers of enum values by name, from the broker's schema ({@link enumNumbers}). */
export interface EncodeEnums {
  readonly code: ReadonlyMap<RocketCode, number>;
  readonly digestType: ReadonlyMap<string, number>;
  readonly encoding: ReadonlyMap<string, number>;
  readonly messageType: ReadonlyMap<string, number>;
}

const F = WIRE_FIELDS;
const TIME_SECONDS = tagOf(F['google.protobuf.Duration'].seconds);
const TIME_NANOS = tagOf(F['google.protobuf.Duration'].nanos);
const STATUS_CODE = tagOf(F['apache.rocketmq.v2.Status'].code);
const STATUS_MESSAGE = tagOf(F['apache.rocketmq.v2.Status'].message);
const RESOURCE_NAMESPACE = tagOf(F['apache.rocketmq.v2.Resource'].resource_namespace);
const RESOURCE_NAME = tagOf(F['apache.rocketmq.v2.Resource'].name);
const DIGEST_TYPE = tagOf(F['apache.rocketmq.v2.Digest'].type);
const DIGEST_CHECKSUM = tagOf(F['apache.rocketmq.v2.Digest'].checksum);
const DLQ_TOPIC = tagOf(F['apache.rocketmq.v2.DeadLetterQueue'].topic);
const DLQ_MESSAGE_ID = tagOf(F['apache.rocketmq.v2.DeadLetterQueue'].message_id);
const SYSTEM = tagsOf(F['apache.rocketmq.v2.SystemProperties']);
const MESSAGE = tagsOf(F['apache.rocketmq.v2.Message']);
const ENTRY_KEY = tagOf(F['apache.rocketmq.v2.Message.UserPropertiesEntry'].key);
const ENTRY_VALUE = tagOf(F['apache.rocketmq.v2.Message.UserPropertiesEntry'].value);
const SEND_ENTRY = tagsOf(F['apache.rocketmq.v2.SendResultEntry']);
const SEND_RESPONSE = tagsOf(F['apache.rocketmq.v2.SendMessageResponse']);
const RECEIVE_RESPONSE = tagsOf(F['apache.rocketmq.v2.ReceiveMessageResponse']);
const ACK_ENTRY = tagsOf(F['apache.rocketmq.v2.AckMessageResultEntry']);
const ACK_RESPONSE = tagsOf(F['apache.rocketmq.v2.AckMessageResponse']);

/** What a unary handler answers: a status, and for these RPCs their entries (none after a failure). */
interface Answer<Entry> {
  readonly status: RocketStatus;
  readonly entries?: readonly Entry[];
}

/**
 * What an encoder's answers are: the message's bytes alone, or a gRPC message (its 5-byte prefix,
 * then the bytes), which the server writes as it is instead of copying it behind a prefix.
 */
export type AnswerFraming = 'bare' | 'grpc';

/** The encoders, over the enum numbers of the broker's schema. */
export class RocketEncoder {
  readonly #enums: EncodeEnums;
  readonly #okStatus: Uint8Array;
  /** Every answer is written here, then copied out whole: encoding is synchronous, never nested. */
  readonly #writer: Writer;

  constructor(enums: EncodeEnums, framing: AnswerFraming = 'bare') {
    this.#enums = enums;
    this.#writer = new Writer(framing === 'grpc' ? MESSAGE_PREFIX_BYTES : 0);
    this.#okStatus = this.#statusBytes(OK_STATUS);
  }

  sendMessageResponse(answer: Answer<SendResultEntry>): Buffer {
    const writer = this.#writer;
    this.#status(writer, SEND_RESPONSE.status, answer.status);
    for (const entry of answer.entries ?? []) {
      writer.uint32(SEND_RESPONSE.entries).fork();
      this.#status(writer, SEND_ENTRY.status, entry.status);
      string(writer, SEND_ENTRY.message_id, entry.messageId);
      string(writer, SEND_ENTRY.transaction_id, entry.transactionId);
      writer.uint32(SEND_ENTRY.offset).int64(entry.offset);
      writer.ldelim();
    }
    return writer.finish();
  }

  ackMessageResponse(answer: Answer<AckMessageResultEntry>): Buffer {
    const writer = this.#writer;
    this.#status(writer, ACK_RESPONSE.status, answer.status);
    for (const entry of answer.entries ?? []) {
      writer.uint32(ACK_RESPONSE.entries).fork();
      string(writer, ACK_ENTRY.message_id, entry.messageId);
      string(writer, ACK_ENTRY.receipt_handle, entry.receiptHandle);
      this.#status(writer, ACK_ENTRY.status, entry.status);
      writer.ldelim();
    }
    return writer.finish();
  }

  /** One frame of a `ReceiveMessage` stream: a status, a message or the delivery timestamp. */
  receiveMessageResponse(frame: ReceiveMessageResponse): Buffer {
    const writer = this.#writer;
    if ('status' in frame) this.#status(writer, RECEIVE_RESPONSE.status, frame.status);
    else if ('message' in frame) this.#message(writer, RECEIVE_RESPONSE.message, frame.message);
    else duration(writer, RECEIVE_RESPONSE.delivery_timestamp, frame.deliveryTimestamp);
    return writer.finish();
  }

  #statusBytes(status: RocketStatus): Uint8Array {
    // A writer of its own: a status other than OK is written while an answer is being written.
    const writer = new Writer(0);
    writer.uint32(STATUS_CODE).int32(this.#number(this.#enums.code, status.code));
    string(writer, STATUS_MESSAGE, status.message);
    return writer.finish();
  }

  #status(writer: Writer, tag: number, status: RocketStatus): void {
    // An embedded message and a `bytes` field are framed alike: prebuilt bytes go in whole.
    writer.uint32(tag).bytes(status === OK_STATUS ? this.#okStatus : this.#statusBytes(status));
  }

  #message(writer: Writer, tag: number, message: RocketMessage): void {
    writer.uint32(tag).fork();
    if (message.topic !== undefined) resource(writer, MESSAGE.topic, message.topic);
    const properties = message.userProperties;
    // A plain record of strings: `for…in` walks it without the array of pairs `Object.entries` makes.
    for (const key in properties) {
      writer.uint32(MESSAGE.user_properties).fork();
      writer
        .uint32(ENTRY_KEY)
        .string(key)
        .uint32(ENTRY_VALUE)
        .string(properties[key] as string);
      writer.ldelim();
    }
    if (message.systemProperties !== undefined) {
      this.#systemProperties(writer, MESSAGE.system_properties, message.systemProperties);
    }
    if (message.body !== undefined) writer.uint32(MESSAGE.body).bytes(message.body);
    writer.ldelim();
  }

  #systemProperties(writer: Writer, tag: number, system: SystemProperties): void {
    const enums = this.#enums;
    writer.uint32(tag).fork();
    // Fields in number order, as protobuf writers write them.
    string(writer, SYSTEM.tag, system.tag);
    for (const key of system.keys ?? []) writer.uint32(SYSTEM.keys).string(key);
    string(writer, SYSTEM.message_id, system.messageId);
    if (system.bodyDigest !== undefined) {
      writer.uint32(SYSTEM.body_digest).fork();
      writer.uint32(DIGEST_TYPE).int32(this.#number(enums.digestType, system.bodyDigest.type));
      string(writer, DIGEST_CHECKSUM, system.bodyDigest.checksum);
      writer.ldelim();
    }
    enumField(writer, SYSTEM.body_encoding, enums.encoding, system.bodyEncoding);
    enumField(writer, SYSTEM.message_type, enums.messageType, system.messageType);
    duration(writer, SYSTEM.born_timestamp, system.bornTimestamp);
    string(writer, SYSTEM.born_host, system.bornHost);
    string(writer, SYSTEM.store_host, system.storeHost);
    duration(writer, SYSTEM.delivery_timestamp, system.deliveryTimestamp);
    string(writer, SYSTEM.receipt_handle, system.receiptHandle);
    if (system.queueId !== undefined) writer.uint32(SYSTEM.queue_id).int32(system.queueId);
    if (system.queueOffset !== undefined) writer.uint32(SYSTEM.queue_offset).int64(system.queueOffset);
    duration(writer, SYSTEM.invisible_duration, system.invisibleDuration);
    if (system.deliveryAttempt !== undefined) {
      writer.uint32(SYSTEM.delivery_attempt).int32(system.deliveryAttempt);
    }
    string(writer, SYSTEM.message_group, system.messageGroup);
    if (system.deadLetterQueue !== undefined) {
      writer.uint32(SYSTEM.dead_letter_queue).fork();
      string(writer, DLQ_TOPIC, system.deadLetterQueue.topic);
      string(writer, DLQ_MESSAGE_ID, system.deadLetterQueue.messageId);
      writer.ldelim();
    }
    writer.ldelim();
  }

  #number<Name>(numbers: ReadonlyMap<Name, number>, name: Name): number {
    const number = numbers.get(name);
    if (number === undefined) throw new Error(`no enum value named ${String(name)} in the schema`);
    return number;
  }
}

/**
 * A string field, written whenever the answer has it, even empty: as proto-loader's encoder did,
 * so a reader that keeps "absent" apart from the default (`defaults: false`) reads what it did.
 */
function string(writer: Writer, tag: number, value: string | undefined): void {
  if (value !== undefined) writer.uint32(tag).string(value);
}

function enumField(
  writer: Writer,
  tag: number,
  numbers: ReadonlyMap<string, number>,
  name: string | undefined,
) {
  const number = name === undefined ? undefined : numbers.get(name);
  if (number === undefined) {
    if (name !== undefined) throw new Error(`no enum value named ${name} in the schema`);
    return;
  }
  writer.uint32(tag).int32(number);
}

function resource(writer: Writer, tag: number, value: Resource): void {
  writer.uint32(tag).fork();
  string(writer, RESOURCE_NAMESPACE, value.resourceNamespace);
  string(writer, RESOURCE_NAME, value.name);
  writer.ldelim();
}

function duration(writer: Writer, tag: number, value: Duration | undefined): void {
  if (value === undefined) return;
  writer.uint32(tag).fork();
  if (value.seconds !== undefined) writer.uint32(TIME_SECONDS).int64(value.seconds);
  if (value.nanos !== undefined) writer.uint32(TIME_NANOS).int32(value.nanos);
  writer.ldelim();
}

/** The bytes a varint of `value` (below 2^32) takes. */
function varintBytes(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : value < 0x200000 ? 3 : value < 0x10000000 ? 4 : 5;
}

/**
 * Protobuf's wire format (protobuf.dev/programming-guides/encoding) written into one growing
 * buffer, with protobufjs's writer's calls (`uint32`, `int32`, `int64`, `string`, `bytes`, `fork`,
 * `ldelim`, `finish`). An embedded message's length is not known until it is written: `fork`
 * keeps one byte for it, and `ldelim` moves the message right when its length needs more.
 */
class Writer {
  #buffer = Buffer.allocUnsafe(4_096);
  #at = 0;
  /** Where each open embedded message's length goes. */
  readonly #forks: number[] = [];
  /** Bytes left before the message for the gRPC prefix (5), or none (0). */
  readonly #prefixBytes: number;

  constructor(prefixBytes: number) {
    this.#prefixBytes = prefixBytes;
  }

  uint32(value: number): this {
    this.#room(5);
    this.#varint32(value >>> 0);
    return this;
  }

  int32(value: number): this {
    // A negative int32 is written as its 64-bit two's complement: ten bytes (the wire's rule).
    return value < 0 ? this.int64(value) : this.uint32(value);
  }

  /** An int64 given as a number: exact below 2^53, where offsets and times are. */
  int64(value: number): this {
    this.#room(10);
    const high = Math.floor(value / 2 ** 32);
    let low = (value - high * 2 ** 32) >>> 0;
    let rest = high >>> 0;
    const buffer = this.#buffer;
    // Seven bits at a time from the 64 bits (`rest`:`low`), until what is left is zero.
    while (rest !== 0 || low >= 0x80) {
      buffer[this.#at++] = (low & 0x7f) | 0x80;
      low = ((low >>> 7) | (rest << 25)) >>> 0;
      rest >>>= 7;
    }
    buffer[this.#at++] = low;
    return this;
  }

  string(value: string): this {
    // The strings of an answer are short and ASCII (ids, handles, names, the digest): copied by
    // hand they cost half of `byteLength` and `write`, two calls into C++ each.
    if (value.length < 0x80) {
      this.#room(1 + value.length);
      const buffer = this.#buffer;
      const start = this.#at + 1;
      let at = 0;
      for (; at < value.length; at++) {
        const code = value.charCodeAt(at);
        if (code >= 0x80) break;
        buffer[start + at] = code;
      }
      if (at === value.length) {
        buffer[this.#at] = at;
        this.#at = start + at;
        return this;
      }
    }
    const length = Buffer.byteLength(value, 'utf8');
    this.#room(5 + length);
    this.#varint32(length);
    this.#at += this.#buffer.write(value, this.#at, length, 'utf8');
    return this;
  }

  bytes(value: Uint8Array): this {
    this.#room(5 + value.length);
    this.#varint32(value.length);
    this.#buffer.set(value, this.#at);
    this.#at += value.length;
    return this;
  }

  /** Begin an embedded message (after its tag); {@link ldelim} ends it. */
  fork(): this {
    this.#room(1);
    this.#forks.push(this.#at);
    this.#at += 1;
    return this;
  }

  ldelim(): this {
    const start = this.#forks.pop();
    if (start === undefined) throw new Error('ldelim without fork');
    const length = this.#at - start - 1;
    const prefix = varintBytes(length);
    if (prefix > 1) {
      this.#room(prefix - 1);
      this.#buffer.copyWithin(start + prefix, start + 1, this.#at);
      this.#at += prefix - 1;
    }
    const end = this.#at;
    this.#at = start;
    this.#varint32(length);
    this.#at = end;
    return this;
  }

  /**
   * The bytes written, copied out (behind the gRPC prefix: uncompressed, and the length); the
   * writer starts over.
   */
  finish(): Buffer {
    if (this.#forks.length > 0) throw new Error('an embedded message was not ended');
    const prefix = this.#prefixBytes;
    const bytes = Buffer.allocUnsafe(prefix + this.#at);
    if (prefix > 0) {
      bytes[0] = 0;
      bytes.writeUInt32BE(this.#at, 1);
    }
    this.#buffer.copy(bytes, prefix, 0, this.#at);
    this.#at = 0;
    return bytes;
  }

  #varint32(value: number): void {
    const buffer = this.#buffer;
    let rest = value;
    while (rest >= 0x80) {
      buffer[this.#at++] = (rest & 0x7f) | 0x80;
      rest >>>= 7;
    }
    buffer[this.#at++] = rest;
  }

  #room(bytes: number): void {
    if (this.#at + bytes <= this.#buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.#buffer.length * 2, this.#at + bytes));
    this.#buffer.copy(grown, 0, 0, this.#at);
    this.#buffer = grown;
  }
}
