import protobuf from 'protobufjs/minimal.js';
import type {
  AckMessageRequest,
  Duration,
  FilterExpression,
  ReceiveMessageRequest,
  Resource,
  RocketMessage,
  SendMessageRequest,
  SystemProperties,
} from './rocketmq-schema.js';
import { tagOf, WIRE_FIELDS } from './rocketmq-wire-fields.js';

/**
 * Decoders of the hot requests (`SendMessage`, `ReceiveMessage`, `AckMessage`), straight from the
 * bytes into the shapes the handlers read, as proto-loader's generic path gives them (camelCase,
 * int64 as numbers, enums by name, an absent field `undefined`) but without its message objects
 * and the `toObject` copy of each. Only the fields the handlers read are kept; every other field is
 * skipped by its wire type, as any protobuf reader does. Malformed bytes throw (the gRPC server then
 * answers INTERNAL and no handler runs).
 */

type Reader = protobuf.Reader;

/** Names of an enum's values by number, from the broker's schema ({@link enumNames}). */
export interface DecodeEnums {
  readonly encoding: ReadonlyMap<number, NonNullable<SystemProperties['bodyEncoding']>>;
  readonly messageType: ReadonlyMap<number, NonNullable<SystemProperties['messageType']>>;
  readonly filterType: ReadonlyMap<number, NonNullable<FilterExpression['type']>>;
}

const F = WIRE_FIELDS;
const TIME_SECONDS = tagOf(F['google.protobuf.Duration'].seconds);
const TIME_NANOS = tagOf(F['google.protobuf.Duration'].nanos);
const RESOURCE_NAMESPACE = tagOf(F['apache.rocketmq.v2.Resource'].resource_namespace);
const RESOURCE_NAME = tagOf(F['apache.rocketmq.v2.Resource'].name);
const SYSTEM = F['apache.rocketmq.v2.SystemProperties'];
const SYSTEM_TAG = tagOf(SYSTEM.tag);
const SYSTEM_KEYS = tagOf(SYSTEM.keys);
const SYSTEM_MESSAGE_ID = tagOf(SYSTEM.message_id);
const SYSTEM_BODY_ENCODING = tagOf(SYSTEM.body_encoding);
const SYSTEM_MESSAGE_TYPE = tagOf(SYSTEM.message_type);
const SYSTEM_BORN_TIMESTAMP = tagOf(SYSTEM.born_timestamp);
const SYSTEM_DELIVERY_TIMESTAMP = tagOf(SYSTEM.delivery_timestamp);
const SYSTEM_MESSAGE_GROUP = tagOf(SYSTEM.message_group);
const MESSAGE = F['apache.rocketmq.v2.Message'];
const MESSAGE_TOPIC = tagOf(MESSAGE.topic);
const MESSAGE_USER_PROPERTIES = tagOf(MESSAGE.user_properties);
const MESSAGE_SYSTEM_PROPERTIES = tagOf(MESSAGE.system_properties);
const MESSAGE_BODY = tagOf(MESSAGE.body);
const ENTRY_KEY = tagOf(F['apache.rocketmq.v2.Message.UserPropertiesEntry'].key);
const ENTRY_VALUE = tagOf(F['apache.rocketmq.v2.Message.UserPropertiesEntry'].value);
const SEND_MESSAGES = tagOf(F['apache.rocketmq.v2.SendMessageRequest'].messages);
const RECEIVE = F['apache.rocketmq.v2.ReceiveMessageRequest'];
const RECEIVE_GROUP = tagOf(RECEIVE.group);
const RECEIVE_QUEUE = tagOf(RECEIVE.message_queue);
const RECEIVE_FILTER = tagOf(RECEIVE.filter_expression);
const RECEIVE_BATCH_SIZE = tagOf(RECEIVE.batch_size);
const RECEIVE_INVISIBLE_DURATION = tagOf(RECEIVE.invisible_duration);
const RECEIVE_AUTO_RENEW = tagOf(RECEIVE.auto_renew);
const RECEIVE_LONG_POLLING = tagOf(RECEIVE.long_polling_timeout);
const QUEUE_TOPIC = tagOf(F['apache.rocketmq.v2.MessageQueue'].topic);
const FILTER_TYPE = tagOf(F['apache.rocketmq.v2.FilterExpression'].type);
const FILTER_EXPRESSION = tagOf(F['apache.rocketmq.v2.FilterExpression'].expression);
const ACK = F['apache.rocketmq.v2.AckMessageRequest'];
const ACK_GROUP = tagOf(ACK.group);
const ACK_TOPIC = tagOf(ACK.topic);
const ACK_ENTRIES = tagOf(ACK.entries);
const ACK_ENTRY_MESSAGE_ID = tagOf(F['apache.rocketmq.v2.AckMessageEntry'].message_id);
const ACK_ENTRY_RECEIPT_HANDLE = tagOf(F['apache.rocketmq.v2.AckMessageEntry'].receipt_handle);

/** Where an embedded message ends: its length prefix read, bounded by the bytes there are. */
function endOf(reader: Reader): number {
  const end = reader.uint32() + reader.pos;
  if (end > reader.len)
    throw new RangeError(`an embedded message runs past the end (${end} > ${reader.len})`);
  return end;
}

/**
 * An enum value's name. A number the schema does not name (a newer client's) stands as the
 * unspecified value, which no handler acts on, as it acted on none before.
 */
function named<Name>(names: ReadonlyMap<number, Name>, number: number): Name {
  const name = names.get(number) ?? names.get(0);
  if (name === undefined) throw new Error('an enum without a value 0');
  return name;
}

/** The rest of a field the handlers do not read, by its wire type. */
function skip(reader: Reader, tag: number): void {
  reader.skipType(tag & 7);
}

/** 2^64: a varint of ten bytes at or past 2^63 is a negative int64 in two's complement. */
const TWO_TO_64 = 2 ** 64;

/**
 * A varint of up to ten bytes read straight into a number, without protobufjs's 64-bit object
 * (every message's born timestamp has one). Exact below 2^53, where times and offsets are.
 */
function int64(reader: Reader): number {
  const { buf } = reader;
  let value = 0;
  let scale = 1;
  for (let read = 0; read < 10; read++) {
    if (reader.pos >= reader.len) throw new RangeError('a varint runs past the end');
    const byte = buf[reader.pos++] as number;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value >= 2 ** 63 ? value - TWO_TO_64 : value;
    scale *= 128;
  }
  throw new RangeError('a varint longer than ten bytes');
}

function duration(reader: Reader): Duration {
  const end = endOf(reader);
  const decoded: { seconds?: number; nanos?: number } = {};
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag === TIME_SECONDS) decoded.seconds = int64(reader);
    else if (tag === TIME_NANOS) decoded.nanos = reader.int32();
    else skip(reader, tag);
  }
  return decoded;
}

function resource(reader: Reader): Resource {
  const end = endOf(reader);
  const decoded: { resourceNamespace?: string; name?: string } = {};
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag === RESOURCE_NAMESPACE) decoded.resourceNamespace = reader.string();
    else if (tag === RESOURCE_NAME) decoded.name = reader.string();
    else skip(reader, tag);
  }
  return decoded;
}

function systemProperties(reader: Reader, enums: DecodeEnums): SystemProperties {
  const end = endOf(reader);
  const system: { -readonly [K in keyof SystemProperties]: SystemProperties[K] } = {};
  const keys: string[] = [];
  while (reader.pos < end) {
    const tag = reader.uint32();
    switch (tag) {
      case SYSTEM_TAG:
        system.tag = reader.string();
        break;
      case SYSTEM_KEYS:
        keys.push(reader.string());
        break;
      case SYSTEM_MESSAGE_ID:
        system.messageId = reader.string();
        break;
      case SYSTEM_BODY_ENCODING:
        system.bodyEncoding = named(enums.encoding, reader.int32());
        break;
      case SYSTEM_MESSAGE_TYPE:
        system.messageType = named(enums.messageType, reader.int32());
        break;
      case SYSTEM_BORN_TIMESTAMP:
        system.bornTimestamp = duration(reader);
        break;
      case SYSTEM_DELIVERY_TIMESTAMP:
        system.deliveryTimestamp = duration(reader);
        break;
      case SYSTEM_MESSAGE_GROUP:
        system.messageGroup = reader.string();
        break;
      default:
        skip(reader, tag);
    }
  }
  if (keys.length > 0) system.keys = keys;
  return system;
}

function userProperty(reader: Reader, into: Record<string, string>): void {
  const end = endOf(reader);
  let key = '';
  let value = '';
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag === ENTRY_KEY) key = reader.string();
    else if (tag === ENTRY_VALUE) value = reader.string();
    else skip(reader, tag);
  }
  into[key] = value;
}

function message(reader: Reader, enums: DecodeEnums): RocketMessage {
  const end = endOf(reader);
  const decoded: { -readonly [K in keyof RocketMessage]: RocketMessage[K] } = {};
  let properties: Record<string, string> | undefined;
  while (reader.pos < end) {
    const tag = reader.uint32();
    if (tag === MESSAGE_TOPIC) decoded.topic = resource(reader);
    else if (tag === MESSAGE_USER_PROPERTIES) {
      // A null prototype: a property named `__proto__` is a key like any other.
      properties ??= Object.create(null) as Record<string, string>;
      userProperty(reader, properties);
    } else if (tag === MESSAGE_SYSTEM_PROPERTIES) decoded.systemProperties = systemProperties(reader, enums);
    else if (tag === MESSAGE_BODY) decoded.body = reader.bytes();
    else skip(reader, tag);
  }
  if (properties !== undefined) decoded.userProperties = properties;
  return decoded;
}

/** `SendMessageRequest`. @throws Error on bytes that are not one. */
export function decodeSendMessageRequest(bytes: Uint8Array, enums: DecodeEnums): SendMessageRequest {
  const reader = protobuf.Reader.create(bytes);
  const messages: RocketMessage[] = [];
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag === SEND_MESSAGES) messages.push(message(reader, enums));
    else skip(reader, tag);
  }
  return messages.length === 0 ? {} : { messages };
}

/** `ReceiveMessageRequest`. @throws Error on bytes that are not one. */
export function decodeReceiveMessageRequest(bytes: Uint8Array, enums: DecodeEnums): ReceiveMessageRequest {
  const reader = protobuf.Reader.create(bytes);
  const request: { -readonly [K in keyof ReceiveMessageRequest]: ReceiveMessageRequest[K] } = {};
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    switch (tag) {
      case RECEIVE_GROUP:
        request.group = resource(reader);
        break;
      case RECEIVE_QUEUE: {
        // Of the queue, the handlers read its topic only.
        const end = endOf(reader);
        while (reader.pos < end) {
          const inner = reader.uint32();
          if (inner === QUEUE_TOPIC) request.messageQueue = { topic: resource(reader) };
          else skip(reader, inner);
        }
        request.messageQueue ??= {};
        break;
      }
      case RECEIVE_FILTER: {
        const end = endOf(reader);
        const filter: { -readonly [K in keyof FilterExpression]: FilterExpression[K] } = {};
        while (reader.pos < end) {
          const inner = reader.uint32();
          if (inner === FILTER_TYPE) filter.type = named(enums.filterType, reader.int32());
          else if (inner === FILTER_EXPRESSION) filter.expression = reader.string();
          else skip(reader, inner);
        }
        request.filterExpression = filter;
        break;
      }
      case RECEIVE_BATCH_SIZE:
        request.batchSize = reader.int32();
        break;
      case RECEIVE_INVISIBLE_DURATION:
        request.invisibleDuration = duration(reader);
        break;
      case RECEIVE_AUTO_RENEW:
        request.autoRenew = reader.bool();
        break;
      case RECEIVE_LONG_POLLING:
        request.longPollingTimeout = duration(reader);
        break;
      default:
        skip(reader, tag);
    }
  }
  return request;
}

/** `AckMessageRequest`. @throws Error on bytes that are not one. */
export function decodeAckMessageRequest(bytes: Uint8Array): AckMessageRequest {
  const reader = protobuf.Reader.create(bytes);
  const request: { -readonly [K in keyof AckMessageRequest]: AckMessageRequest[K] } = {};
  const entries: { messageId?: string; receiptHandle?: string }[] = [];
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag === ACK_GROUP) request.group = resource(reader);
    else if (tag === ACK_TOPIC) request.topic = resource(reader);
    else if (tag === ACK_ENTRIES) {
      const end = endOf(reader);
      const entry: { messageId?: string; receiptHandle?: string } = {};
      while (reader.pos < end) {
        const inner = reader.uint32();
        if (inner === ACK_ENTRY_MESSAGE_ID) entry.messageId = reader.string();
        else if (inner === ACK_ENTRY_RECEIPT_HANDLE) entry.receiptHandle = reader.string();
        else skip(reader, inner);
      }
      entries.push(entry);
    } else skip(reader, tag);
  }
  if (entries.length > 0) request.entries = entries;
  return request;
}
