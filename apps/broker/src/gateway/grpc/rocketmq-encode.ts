import protobuf from 'protobufjs/minimal.js';
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
import { tagOf, WIRE_FIELDS } from './rocketmq-wire-fields.js';

/**
 * Encoders of the hot answers (`SendMessage`, `ReceiveMessage`'s frames, `AckMessage`), straight
 * from the handlers' shapes into bytes, without proto-loader's `fromObject` copy of each answer.
 * The OK status, in nearly every answer, is encoded once and spliced in as it is (an embedded
 * message is written as length-prefixed bytes, so prebuilt bytes go in whole).
 */

type Writer = protobuf.Writer;

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
const SYSTEM = F['apache.rocketmq.v2.SystemProperties'];
const MESSAGE = F['apache.rocketmq.v2.Message'];
const ENTRY_KEY = tagOf(F['apache.rocketmq.v2.Message.UserPropertiesEntry'].key);
const ENTRY_VALUE = tagOf(F['apache.rocketmq.v2.Message.UserPropertiesEntry'].value);
const SEND_ENTRY = F['apache.rocketmq.v2.SendResultEntry'];
const SEND_RESPONSE = F['apache.rocketmq.v2.SendMessageResponse'];
const RECEIVE_RESPONSE = F['apache.rocketmq.v2.ReceiveMessageResponse'];
const ACK_ENTRY = F['apache.rocketmq.v2.AckMessageResultEntry'];
const ACK_RESPONSE = F['apache.rocketmq.v2.AckMessageResponse'];

/** What a unary handler answers: a status, and for these RPCs their entries (none after a failure). */
interface Answer<Entry> {
  readonly status: RocketStatus;
  readonly entries?: readonly Entry[];
}

/** The encoders, over the enum numbers of the broker's schema. */
export class RocketEncoder {
  readonly #enums: EncodeEnums;
  readonly #okStatus: Uint8Array;

  constructor(enums: EncodeEnums) {
    this.#enums = enums;
    this.#okStatus = this.#statusBytes(OK_STATUS);
  }

  sendMessageResponse(answer: Answer<SendResultEntry>): Buffer {
    const writer = protobuf.Writer.create();
    this.#status(writer, tagOf(SEND_RESPONSE.status), answer.status);
    for (const entry of answer.entries ?? []) {
      writer.uint32(tagOf(SEND_RESPONSE.entries)).fork();
      this.#status(writer, tagOf(SEND_ENTRY.status), entry.status);
      string(writer, tagOf(SEND_ENTRY.message_id), entry.messageId);
      string(writer, tagOf(SEND_ENTRY.transaction_id), entry.transactionId);
      writer.uint32(tagOf(SEND_ENTRY.offset)).int64(entry.offset);
      writer.ldelim();
    }
    return finish(writer);
  }

  ackMessageResponse(answer: Answer<AckMessageResultEntry>): Buffer {
    const writer = protobuf.Writer.create();
    this.#status(writer, tagOf(ACK_RESPONSE.status), answer.status);
    for (const entry of answer.entries ?? []) {
      writer.uint32(tagOf(ACK_RESPONSE.entries)).fork();
      string(writer, tagOf(ACK_ENTRY.message_id), entry.messageId);
      string(writer, tagOf(ACK_ENTRY.receipt_handle), entry.receiptHandle);
      this.#status(writer, tagOf(ACK_ENTRY.status), entry.status);
      writer.ldelim();
    }
    return finish(writer);
  }

  /** One frame of a `ReceiveMessage` stream: a status, a message or the delivery timestamp. */
  receiveMessageResponse(frame: ReceiveMessageResponse): Buffer {
    const writer = protobuf.Writer.create();
    if ('status' in frame) this.#status(writer, tagOf(RECEIVE_RESPONSE.status), frame.status);
    else if ('message' in frame) this.#message(writer, tagOf(RECEIVE_RESPONSE.message), frame.message);
    else duration(writer, tagOf(RECEIVE_RESPONSE.delivery_timestamp), frame.deliveryTimestamp);
    return finish(writer);
  }

  #statusBytes(status: RocketStatus): Uint8Array {
    const writer = protobuf.Writer.create();
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
    if (message.topic !== undefined) resource(writer, tagOf(MESSAGE.topic), message.topic);
    for (const [key, value] of Object.entries(message.userProperties ?? {})) {
      writer.uint32(tagOf(MESSAGE.user_properties)).fork();
      writer.uint32(ENTRY_KEY).string(key).uint32(ENTRY_VALUE).string(value);
      writer.ldelim();
    }
    if (message.systemProperties !== undefined) {
      this.#systemProperties(writer, tagOf(MESSAGE.system_properties), message.systemProperties);
    }
    if (message.body !== undefined) writer.uint32(tagOf(MESSAGE.body)).bytes(message.body);
    writer.ldelim();
  }

  #systemProperties(writer: Writer, tag: number, system: SystemProperties): void {
    const enums = this.#enums;
    writer.uint32(tag).fork();
    // Fields in number order, as protobuf writers write them.
    string(writer, tagOf(SYSTEM.tag), system.tag);
    for (const key of system.keys ?? []) writer.uint32(tagOf(SYSTEM.keys)).string(key);
    string(writer, tagOf(SYSTEM.message_id), system.messageId);
    if (system.bodyDigest !== undefined) {
      writer.uint32(tagOf(SYSTEM.body_digest)).fork();
      writer.uint32(DIGEST_TYPE).int32(this.#number(enums.digestType, system.bodyDigest.type));
      string(writer, DIGEST_CHECKSUM, system.bodyDigest.checksum);
      writer.ldelim();
    }
    enumField(writer, tagOf(SYSTEM.body_encoding), enums.encoding, system.bodyEncoding);
    enumField(writer, tagOf(SYSTEM.message_type), enums.messageType, system.messageType);
    duration(writer, tagOf(SYSTEM.born_timestamp), system.bornTimestamp);
    string(writer, tagOf(SYSTEM.born_host), system.bornHost);
    string(writer, tagOf(SYSTEM.store_host), system.storeHost);
    duration(writer, tagOf(SYSTEM.delivery_timestamp), system.deliveryTimestamp);
    string(writer, tagOf(SYSTEM.receipt_handle), system.receiptHandle);
    if (system.queueId !== undefined) writer.uint32(tagOf(SYSTEM.queue_id)).int32(system.queueId);
    if (system.queueOffset !== undefined) writer.uint32(tagOf(SYSTEM.queue_offset)).int64(system.queueOffset);
    duration(writer, tagOf(SYSTEM.invisible_duration), system.invisibleDuration);
    if (system.deliveryAttempt !== undefined) {
      writer.uint32(tagOf(SYSTEM.delivery_attempt)).int32(system.deliveryAttempt);
    }
    string(writer, tagOf(SYSTEM.message_group), system.messageGroup);
    if (system.deadLetterQueue !== undefined) {
      writer.uint32(tagOf(SYSTEM.dead_letter_queue)).fork();
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

/** The bytes as a Buffer (Node's protobufjs writer already makes one). */
function finish(writer: Writer): Buffer {
  const bytes = writer.finish();
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
