/**
 * Every field the RocketMQ front door's own codecs (rocketmq-decode.ts, rocketmq-encode.ts) read or
 * write: by message, its field number and protobuf type. The codecs take their tags from here and
 * nowhere else, and the schema drift test (rocketmq-schema.test.ts) holds each entry to the
 * `.proto` files Apache's Node client ships, so a codec cannot use a number or a wire type the
 * clients do not.
 */

/** A field's protobuf type, as far as it decides the wire type (a map is its repeated entry message). */
export type WireKind = 'string' | 'bytes' | 'message' | 'int32' | 'int64' | 'bool' | 'enum';

/** A field: its number, and its type. */
export type WireField = readonly [number: number, kind: WireKind];

export const WIRE_FIELDS = {
  'google.protobuf.Timestamp': { seconds: [1, 'int64'], nanos: [2, 'int32'] },
  'google.protobuf.Duration': { seconds: [1, 'int64'], nanos: [2, 'int32'] },
  'apache.rocketmq.v2.Status': { code: [1, 'enum'], message: [2, 'string'] },
  'apache.rocketmq.v2.Resource': { resource_namespace: [1, 'string'], name: [2, 'string'] },
  'apache.rocketmq.v2.MessageQueue': { topic: [1, 'message'] },
  'apache.rocketmq.v2.FilterExpression': { type: [1, 'enum'], expression: [2, 'string'] },
  'apache.rocketmq.v2.Digest': { type: [1, 'enum'], checksum: [2, 'string'] },
  'apache.rocketmq.v2.DeadLetterQueue': { topic: [1, 'string'], message_id: [2, 'string'] },
  'apache.rocketmq.v2.SystemProperties': {
    tag: [1, 'string'],
    keys: [2, 'string'],
    message_id: [3, 'string'],
    body_digest: [4, 'message'],
    body_encoding: [5, 'enum'],
    message_type: [6, 'enum'],
    born_timestamp: [7, 'message'],
    born_host: [8, 'string'],
    store_host: [10, 'string'],
    delivery_timestamp: [11, 'message'],
    receipt_handle: [12, 'string'],
    queue_id: [13, 'int32'],
    queue_offset: [14, 'int64'],
    invisible_duration: [15, 'message'],
    delivery_attempt: [16, 'int32'],
    message_group: [17, 'string'],
    dead_letter_queue: [20, 'message'],
  },
  'apache.rocketmq.v2.Message': {
    topic: [1, 'message'],
    user_properties: [2, 'message'],
    system_properties: [3, 'message'],
    body: [4, 'bytes'],
  },
  /** A `map<string, string>` entry, as protobuf encodes one. */
  'apache.rocketmq.v2.Message.UserPropertiesEntry': { key: [1, 'string'], value: [2, 'string'] },
  'apache.rocketmq.v2.SendMessageRequest': { messages: [1, 'message'] },
  'apache.rocketmq.v2.SendResultEntry': {
    status: [1, 'message'],
    message_id: [2, 'string'],
    transaction_id: [3, 'string'],
    offset: [4, 'int64'],
  },
  'apache.rocketmq.v2.SendMessageResponse': { status: [1, 'message'], entries: [2, 'message'] },
  'apache.rocketmq.v2.ReceiveMessageRequest': {
    group: [1, 'message'],
    message_queue: [2, 'message'],
    filter_expression: [3, 'message'],
    batch_size: [4, 'int32'],
    invisible_duration: [5, 'message'],
    auto_renew: [6, 'bool'],
    long_polling_timeout: [7, 'message'],
  },
  'apache.rocketmq.v2.ReceiveMessageResponse': {
    status: [1, 'message'],
    message: [2, 'message'],
    delivery_timestamp: [3, 'message'],
  },
  'apache.rocketmq.v2.AckMessageEntry': { message_id: [1, 'string'], receipt_handle: [2, 'string'] },
  'apache.rocketmq.v2.AckMessageRequest': {
    group: [1, 'message'],
    topic: [2, 'message'],
    entries: [3, 'message'],
  },
  'apache.rocketmq.v2.AckMessageResultEntry': {
    message_id: [1, 'string'],
    receipt_handle: [2, 'string'],
    status: [3, 'message'],
  },
  'apache.rocketmq.v2.AckMessageResponse': { status: [1, 'message'], entries: [2, 'message'] },
} as const satisfies Record<string, Record<string, WireField>>;

/** Protobuf's wire type for a kind: length-delimited for strings, bytes and messages, else a varint. */
function wireTypeOf(kind: WireKind): number {
  return kind === 'string' || kind === 'bytes' || kind === 'message' ? 2 : 0;
}

/** The key a field is written with (and read by): its number and wire type. */
export function tagOf([number, kind]: WireField): number {
  return (number << 3) | wireTypeOf(kind);
}

/**
 * The keys of every field of a message, by field name, worked out once: the encoders write a
 * dozen keys per delivered message, and reading each from its table entry as they go showed in
 * profiles.
 */
export function tagsOf<Fields extends Record<string, WireField>>(
  fields: Fields,
): { readonly [K in keyof Fields]: number } {
  const tags: Partial<Record<keyof Fields, number>> = {};
  for (const name of Object.keys(fields) as (keyof Fields)[]) tags[name] = tagOf(fields[name] as WireField);
  return tags as { readonly [K in keyof Fields]: number };
}
