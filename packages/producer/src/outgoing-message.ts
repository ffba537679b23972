import { badRequestError, ClientError, createMessageId } from '@ricochet/client';
import {
  ERROR_CODES,
  MAX_PROPERTIES_BYTES,
  type OutgoingMessage,
  outgoingMessageSchema,
  propertiesByteLength,
  TOPIC_NAME_PATTERN,
  utf8ByteLength,
} from '@ricochet/protocol';

/** A message as an application hands it to `Producer.send`. */
export interface ProducerMessage {
  /** The topic to store the message in: 1–127 of `A–Z a–z 0–9 _ . -`. Required. */
  readonly topic: string;
  /**
   * The payload; a string is sent as its UTF-8 bytes. Bytes are sent as they are, not copied:
   * do not change them until `send` settles, or a retry could send different content. Required.
   */
  readonly body: Uint8Array | string;
  /** What subscriptions filter on. @default undefined (no tag) */
  readonly tag?: string;
  /** Business keys to look the message up by. @default undefined (none) */
  readonly keys?: readonly string[];
  /** The FIFO key: fewer than 64 UTF-8 bytes (P5). @default undefined */
  readonly messageGroup?: string;
  /** String properties, at most 16 KiB of UTF-8 in all. @default undefined (none) */
  readonly properties?: Readonly<Record<string, string>>;
  /** Deliver no earlier than this many ms after the broker stores it (T1). @default undefined */
  readonly delayMs?: number;
  /** Deliver no earlier than this time, epoch ms (T1). @default undefined */
  readonly deliverAt?: number;
  /** One of RocketMQ's 18 delay levels, 1 (1 s) to 18 (2 h) (T1). @default undefined */
  readonly delayLevel?: number;
  /**
   * The message's id, for callers that re-send the same message after a crash: the broker's dedup
   * window then stores it once (R3). @default a new {@link createMessageId}
   */
  readonly messageId?: string;
}

/**
 * What a message costs in a frame besides the fields counted one by one: field names, the id,
 * the integers. Generous, so that a batch estimated under a limit is under it on the wire.
 */
const PER_MESSAGE_OVERHEAD_BYTES = 256;

const utf8 = new TextEncoder();

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const VALID = { success: true } as const;

/**
 * The common case — a topic and a body, nothing else, with an id we generated — needs only its
 * topic checked; running the full schema for it costs more than the rest of a send. Anything
 * else goes through the schema. The broker validates every message again regardless.
 */
function isPlainMessage(input: ProducerMessage, message: OutgoingMessage): boolean {
  return (
    input.messageId === undefined &&
    message.tag === undefined &&
    message.keys === undefined &&
    message.messageGroup === undefined &&
    message.properties === undefined &&
    message.deliverAt === undefined &&
    message.delayMs === undefined &&
    message.delayLevel === undefined &&
    isTopicName(message.topic)
  );
}

/** The last topic name found valid: an application sends to few topics, mostly as the same string. */
let lastTopicName: string | undefined;

function isTopicName(topic: string): boolean {
  if (topic === lastTopicName) return true;
  if (!TOPIC_NAME_PATTERN.test(topic)) return false;
  lastTopicName = topic;
  return true;
}

/** A message ready for the wire, with its estimated encoded size. */
export interface PreparedMessage {
  readonly message: OutgoingMessage;
  readonly encodedBytesEstimate: number;
}

/**
 * Turn an application's message into the wire's, with its id and `bornAt` filled in, and check it
 * against the protocol before any I/O: one malformed message in a batched `send` frame would make
 * the broker refuse the whole frame, failing the messages batched with it.
 *
 * @throws ClientError `400` when a field is malformed; `413` when the body exceeds
 *   `maxBodyBytes` or the properties exceed 16 KiB.
 */
export function prepareMessage(input: ProducerMessage, maxBodyBytes: number, nowMs: number): PreparedMessage {
  const body = typeof input.body === 'string' ? utf8.encode(input.body) : input.body;
  if (!(body instanceof Uint8Array)) {
    throw badRequestError('body must be a Uint8Array or a string');
  }
  if (body.byteLength > maxBodyBytes) {
    throw new ClientError(
      ERROR_CODES.MESSAGE_TOO_LARGE.code,
      `the body is ${body.byteLength} bytes; the broker takes at most ${maxBodyBytes}`,
      { details: { bodyBytes: body.byteLength, maxBodyBytes } },
    );
  }
  const propertiesBytes = input.properties === undefined ? 0 : propertiesByteLength(input.properties);
  if (propertiesBytes > MAX_PROPERTIES_BYTES) {
    throw new ClientError(
      ERROR_CODES.MESSAGE_TOO_LARGE.code,
      `the properties are ${propertiesBytes} bytes; at most ${MAX_PROPERTIES_BYTES} are allowed`,
      { details: { propertiesBytes, maxPropertiesBytes: MAX_PROPERTIES_BYTES } },
    );
  }
  // Built field by field, in the wire's key order: this runs once per send, where a conditional
  // spread per optional field would allocate and copy a throwaway object each.
  // `body` and `bornAt` follow the optional fields that precede them on the wire.
  const message = {
    messageId: input.messageId ?? createMessageId(nowMs),
    topic: input.topic,
  } as Mutable<OutgoingMessage>;
  if (input.tag !== undefined) message.tag = input.tag;
  if (input.keys !== undefined) message.keys = [...input.keys];
  if (input.messageGroup !== undefined) message.messageGroup = input.messageGroup;
  if (input.properties !== undefined) message.properties = { ...input.properties };
  message.body = body;
  message.bornAt = nowMs;
  if (input.deliverAt !== undefined) message.deliverAt = input.deliverAt;
  if (input.delayMs !== undefined) message.delayMs = input.delayMs;
  if (input.delayLevel !== undefined) message.delayLevel = input.delayLevel;
  const checked = isPlainMessage(input, message) ? VALID : outgoingMessageSchema.safeParse(message);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ` : '';
    throw badRequestError(`invalid message: ${where}${issue?.message ?? 'does not match the protocol'}`);
  }
  let encodedBytesEstimate = PER_MESSAGE_OVERHEAD_BYTES + body.byteLength + propertiesBytes;
  encodedBytesEstimate += utf8ByteLength(message.topic) + utf8ByteLength(message.tag ?? '');
  encodedBytesEstimate += utf8ByteLength(message.messageGroup ?? '');
  for (const key of message.keys ?? []) encodedBytesEstimate += utf8ByteLength(key) + 8;
  if (message.properties !== undefined) encodedBytesEstimate += 8 * Object.keys(message.properties).length;
  return { message, encodedBytesEstimate };
}

/**
 * `prepared` with the trace context of its send span (`traceparent`, `tracestate`…) added to its
 * properties. A property the application set itself is kept (it may be forwarding a message with
 * the context of its first send), and the context is left out when it would take the properties
 * past their 16 KiB: tracing never makes a send fail.
 */
export function withTraceContext(
  prepared: PreparedMessage,
  carrier: Readonly<Record<string, string>>,
): PreparedMessage {
  const own = prepared.message.properties;
  let added: Record<string, string> | undefined;
  let addedBytes = 0;
  for (const [key, value] of Object.entries(carrier)) {
    if (own !== undefined && Object.hasOwn(own, key)) continue;
    added ??= {};
    added[key] = value;
    addedBytes += utf8ByteLength(key) + utf8ByteLength(value);
  }
  if (added === undefined) return prepared;
  const ownBytes = own === undefined ? 0 : propertiesByteLength(own);
  if (ownBytes + addedBytes > MAX_PROPERTIES_BYTES) return prepared;
  const message = { ...prepared.message, properties: { ...own, ...added } };
  return {
    message,
    encodedBytesEstimate: prepared.encodedBytesEstimate + addedBytes + 8 * Object.keys(added).length,
  };
}
