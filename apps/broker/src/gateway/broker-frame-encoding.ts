import {
  type BrokerFrame,
  type DeliveredMessage,
  type DeliverFrame,
  encodeFrame,
  type MessagesFrame,
} from '@ricochet/protocol';

/** Encode a frame for a client: deliveries by hand when they can be ({@link encodeDeliveryFrame}), the rest by the codec. */
export function encodeBrokerFrame(frame: BrokerFrame): Uint8Array {
  if (frame.type === 'deliver' || frame.type === 'messages')
    return encodeDeliveryFrame(frame) ?? encodeFrame(frame);
  return encodeFrame(frame);
}

/**
 * MessagePack for the two frames that carry deliveries, `deliver` and `messages`, written by hand:
 * the keys as bytes encoded once, the values straight into one buffer. The codec's msgpackr spends
 * about a microsecond per delivered message walking each object's keys and encoding their names,
 * on the path every message takes to a consumer.
 *
 * It writes exactly the bytes the codec writes for the same frame (standard MessagePack, the
 * same choice of format for every value: see the tests, which compare the two byte for byte),
 * for messages in the shape the engine builds them (`toDeliveredMessage`): the fields below in
 * that order, `tag` last when present. A message with any other field (keys, a message group,
 * properties, a dead-letter record) makes it return `undefined`, and the caller uses the codec.
 */
export function encodeDeliveryFrame(frame: DeliverFrame | MessagesFrame): Uint8Array | undefined {
  const { messages } = frame;
  let capacity = 32;
  for (const message of messages) {
    if (!isPlain(message)) return undefined;
    capacity += MESSAGE_OVERHEAD_BYTES + message.body.byteLength;
    capacity += 3 * (message.messageId.length + message.topic.length + message.receiptHandle.length);
    if (message.tag !== undefined) capacity += 3 * message.tag.length;
  }
  const writer = new Writer(capacity);
  writer.bytes(FRAME_HEADER);
  if (frame.type === 'deliver') {
    writer.bytes(TYPE_DELIVER);
    writer.bytes(KEY_SUBSCRIPTION_ID);
    writer.number(frame.subscriptionId);
  } else {
    writer.bytes(TYPE_MESSAGES);
    writer.bytes(KEY_ID);
    writer.number(frame.id);
  }
  writer.bytes(KEY_MESSAGES);
  writer.arrayHeader(messages.length);
  for (const message of messages) {
    writer.byte(message.tag === undefined ? FIXMAP | 7 : FIXMAP | 8);
    writer.bytes(KEY_MESSAGE_ID);
    writer.string(message.messageId);
    writer.bytes(KEY_TOPIC);
    writer.string(message.topic);
    writer.bytes(KEY_BODY);
    writer.binary(message.body);
    writer.bytes(KEY_BORN_AT);
    writer.number(message.bornAt);
    writer.bytes(KEY_DELIVERY_ATTEMPT);
    writer.number(message.deliveryAttempt);
    writer.bytes(KEY_OFFSET);
    writer.number(message.offset);
    writer.bytes(KEY_RECEIPT_HANDLE);
    writer.string(message.receiptHandle);
    if (message.tag !== undefined) {
      writer.bytes(KEY_TAG);
      writer.string(message.tag);
    }
  }
  return writer.result();
}

/** Only the fields this encoder writes, in the engine's order (a plain object, so `for…in` is its own keys). */
function isPlain(message: DeliveredMessage): boolean {
  let index = 0;
  for (const key in message) {
    if (key !== PLAIN_KEYS[index]) return false;
    index++;
  }
  return index === PLAIN_KEYS.length || index === PLAIN_KEYS.length - 1;
}

const PLAIN_KEYS = [
  'messageId',
  'topic',
  'body',
  'bornAt',
  'deliveryAttempt',
  'offset',
  'receiptHandle',
  'tag',
] as const;

/** Headers, keys, numbers: a generous bound on what a message needs beyond its body and strings. */
const MESSAGE_OVERHEAD_BYTES = 96;

const FIXMAP = 0x80;
const encoder = new TextEncoder();
/** A string as MessagePack writes it: its header, then its UTF-8 bytes (all keys are under 32 bytes). */
const fixstr = (text: string): Uint8Array => {
  const utf8 = encoder.encode(text);
  return Uint8Array.of(0xa0 | utf8.length, ...utf8);
};
const FRAME_HEADER = Uint8Array.of(FIXMAP | 3, ...fixstr('type'));
const TYPE_DELIVER = fixstr('deliver');
const TYPE_MESSAGES = fixstr('messages');
const KEY_SUBSCRIPTION_ID = fixstr('subscriptionId');
const KEY_ID = fixstr('id');
const KEY_MESSAGES = fixstr('messages');
const KEY_MESSAGE_ID = fixstr('messageId');
const KEY_TOPIC = fixstr('topic');
const KEY_BODY = fixstr('body');
const KEY_BORN_AT = fixstr('bornAt');
const KEY_DELIVERY_ATTEMPT = fixstr('deliveryAttempt');
const KEY_OFFSET = fixstr('offset');
const KEY_RECEIPT_HANDLE = fixstr('receiptHandle');
const KEY_TAG = fixstr('tag');

/** A MessagePack writer into one buffer sized up front, making the codec's format choices. */
class Writer {
  readonly #buffer: Buffer;
  readonly #view: DataView;
  #position = 0;

  constructor(capacity: number) {
    this.#buffer = Buffer.allocUnsafe(capacity);
    this.#view = new DataView(this.#buffer.buffer, this.#buffer.byteOffset, this.#buffer.byteLength);
  }

  result(): Uint8Array {
    return this.#buffer.subarray(0, this.#position);
  }

  byte(value: number): void {
    this.#buffer[this.#position++] = value;
  }

  bytes(value: Uint8Array): void {
    this.#buffer.set(value, this.#position);
    this.#position += value.length;
  }

  arrayHeader(length: number): void {
    if (length < 0x10) {
      this.byte(0x90 | length);
    } else if (length < 0x10000) {
      this.byte(0xdc);
      this.#view.setUint16(this.#position, length);
      this.#position += 2;
    } else {
      this.byte(0xdd);
      this.#view.setUint32(this.#position, length);
      this.#position += 4;
    }
  }

  /** Whole numbers ≥ 0 as the codec writes them: the smallest uint up to 32 bits, then a float64. */
  number(value: number): void {
    if (value >>> 0 !== value) {
      this.byte(0xcb);
      this.#view.setFloat64(this.#position, value);
      this.#position += 8;
    } else if (value < 0x80) {
      this.byte(value);
    } else if (value < 0x100) {
      this.byte(0xcc);
      this.byte(value);
    } else if (value < 0x10000) {
      this.byte(0xcd);
      this.#view.setUint16(this.#position, value);
      this.#position += 2;
    } else {
      this.byte(0xce);
      this.#view.setUint32(this.#position, value);
      this.#position += 4;
    }
  }

  string(value: string): void {
    // Reserve the largest header the string can need, write it, and move it back if smaller.
    const start = this.#position;
    const headerBytes = value.length < 0x20 ? 1 : value.length < 0x100 ? 2 : value.length < 0x10000 ? 3 : 5;
    const length = this.#buffer.write(value, start + headerBytes, 'utf8');
    const actualHeader = length < 0x20 ? 1 : length < 0x100 ? 2 : length < 0x10000 ? 3 : 5;
    if (actualHeader !== headerBytes) {
      this.#buffer.copyWithin(start + actualHeader, start + headerBytes, start + headerBytes + length);
    }
    if (length < 0x20) {
      this.#buffer[start] = 0xa0 | length;
    } else if (length < 0x100) {
      this.#buffer[start] = 0xd9;
      this.#buffer[start + 1] = length;
    } else if (length < 0x10000) {
      this.#buffer[start] = 0xda;
      this.#view.setUint16(start + 1, length);
    } else {
      this.#buffer[start] = 0xdb;
      this.#view.setUint32(start + 1, length);
    }
    this.#position = start + actualHeader + length;
  }

  binary(value: Uint8Array): void {
    const length = value.byteLength;
    if (length < 0x100) {
      this.byte(0xc4);
      this.byte(length);
    } else if (length < 0x10000) {
      this.byte(0xc5);
      this.#view.setUint16(this.#position, length);
      this.#position += 2;
    } else {
      this.byte(0xc6);
      this.#view.setUint32(this.#position, length);
      this.#position += 4;
    }
    this.bytes(value);
  }
}
