import { hash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import {
  type DeliveredMessage,
  hotOutgoingMessage,
  type OutgoingMessage,
  outgoingMessageSchema,
} from '@ricochet/protocol';
import { withDeadLetterProperties } from './rocketmq-dead-letter.js';
import {
  type Duration,
  durationOf,
  millisOf,
  type RocketMessage,
  type RocketStatus,
  type SystemProperties,
} from './rocketmq-schema.js';

/** A RocketMQ message as Ricochet stores it, or why it cannot be (nothing is stored then). */
export type Converted =
  | { readonly ok: true; readonly message: OutgoingMessage }
  | { readonly ok: false; readonly messageId: string; readonly status: RocketStatus };

/**
 * A sent RocketMQ message as a Ricochet {@link OutgoingMessage}: its `message_id` kept (R3's
 * dedup then answers a resend), `delivery_timestamp` as `deliverAt` (T1), user properties as
 * properties. A GZIP body is inflated here, bounded by the body limit, so every consumer,
 * RocketMQ's or Ricochet's, reads the body the producer meant. Everything else the schema of
 * Ricochet's own `send` frame checks, so both front doors refuse the same input.
 */
export function outgoingOf(message: RocketMessage, nowMs: number, maxBodyBytes: number): Converted {
  const system = message.systemProperties ?? {};
  const messageId = system.messageId ?? '';
  const topic = message.topic?.name;
  if (topic === undefined || topic === '')
    return refused(messageId, 'ILLEGAL_TOPIC', 'the message names no topic');
  if (messageId === '') return refused(messageId, 'ILLEGAL_MESSAGE_ID', 'the message has no message_id');
  if (system.messageType === 'TRANSACTION') {
    return refused(messageId, 'UNSUPPORTED', 'Ricochet does not serve transactional messages');
  }
  const deliverAt = millisOf(system.deliveryTimestamp);
  if (system.messageType === 'DELAY' && deliverAt === undefined) {
    return refused(messageId, 'ILLEGAL_DELIVERY_TIME', 'a DELAY message needs a delivery_timestamp');
  }
  const body = bodyOf(message.body ?? new Uint8Array(0), system.bodyEncoding, maxBodyBytes);
  if (!body.ok) return refused(messageId, body.code, body.reason);
  // Built field by field, not by spreads of optional parts: one of these is made per message sent.
  // The fields go in the order Ricochet's own send frame has them.
  const candidate: { -readonly [K in keyof OutgoingMessage]?: OutgoingMessage[K] } = { messageId, topic };
  if (system.tag !== undefined && system.tag !== '') candidate.tag = system.tag;
  if (system.keys !== undefined && system.keys.length > 0) candidate.keys = [...system.keys];
  if (system.messageGroup !== undefined && system.messageGroup !== '') {
    candidate.messageGroup = system.messageGroup;
  }
  const properties = message.userProperties;
  if (properties !== undefined && Object.keys(properties).length > 0)
    candidate.properties = { ...properties };
  candidate.body = body.bytes;
  candidate.bornAt = millisOf(system.bornTimestamp) ?? nowMs;
  if (deliverAt !== undefined && deliverAt > nowMs) candidate.deliverAt = deliverAt;
  // The everyday message is checked by hand as a send frame's are; zod has the rest, and its words.
  const plain = hotOutgoingMessage(candidate);
  if (plain !== undefined) return { ok: true, message: plain };
  const parsed = outgoingMessageSchema.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') ?? 'message';
    return refused(messageId, codeOfField(field), `${field}: ${issue?.message ?? 'invalid'}`);
  }
  return { ok: true, message: parsed.data };
}

function codeOfField(field: string): RocketStatus['code'] {
  if (field.startsWith('tag')) return 'BAD_REQUEST';
  if (field.startsWith('messageId')) return 'ILLEGAL_MESSAGE_ID';
  if (field.startsWith('topic')) return 'ILLEGAL_TOPIC';
  return 'BAD_REQUEST';
}

function refused(messageId: string, code: RocketStatus['code'], text: string): Converted {
  return { ok: false, messageId, status: { code, message: text } };
}

type Body =
  | { readonly ok: true; readonly bytes: Uint8Array }
  | { readonly ok: false; readonly code: RocketStatus['code']; readonly reason: string };

function bodyOf(body: Uint8Array, encoding: SystemProperties['bodyEncoding'], maxBodyBytes: number): Body {
  if (encoding !== 'GZIP') return { ok: true, bytes: body };
  try {
    // One byte past the limit is enough to know it is too large; a zip bomb stops there.
    return { ok: true, bytes: gunzipSync(body, { maxOutputLength: maxBodyBytes + 1 }) };
  } catch (error) {
    if (error instanceof RangeError) {
      return {
        ok: false,
        code: 'MESSAGE_BODY_TOO_LARGE',
        reason: `the inflated body exceeds ${maxBodyBytes} bytes`,
      };
    }
    return { ok: false, code: 'BAD_REQUEST', reason: 'the body is not valid GZIP' };
  }
}

/** What a receive knows about the lease it took, for the delivered message's system properties. */
export interface LeaseOfReceive {
  /** The lease's length (`invisible_duration`), one object for every message of the receive. */
  readonly invisibleDuration: Duration;
  /** The host the broker answers as (`store_host`). */
  readonly storeHost: string;
}

/**
 * A delivered Ricochet message as a RocketMQ message. The MD5 `body_digest` is mandatory (the
 * Node client throws without one, and every client marks a mismatch corrupted); upper-case hex,
 * as the proxy writes it. The receipt handle is Ricochet's own, opaque to the client.
 */
export function rocketMessageOf(message: DeliveredMessage, lease: LeaseOfReceive): RocketMessage {
  // Built field by field, not by spreads: one of these is made for every message delivered.
  const system: { -readonly [K in keyof SystemProperties]: SystemProperties[K] } = {};
  if (message.tag !== undefined) system.tag = message.tag;
  system.keys = message.keys ?? [];
  system.messageId = message.messageId;
  system.bodyDigest = { type: 'MD5', checksum: hash('md5', message.body, 'hex').toUpperCase() };
  system.bodyEncoding = 'IDENTITY';
  system.messageType = message.messageGroup === undefined ? 'NORMAL' : 'FIFO';
  system.bornTimestamp = durationOf(message.bornAt);
  system.bornHost = '';
  system.storeHost = lease.storeHost;
  system.receiptHandle = message.receiptHandle;
  system.queueId = 0;
  system.queueOffset = message.offset;
  system.invisibleDuration = lease.invisibleDuration;
  system.deliveryAttempt = message.deliveryAttempt;
  if (message.messageGroup !== undefined) system.messageGroup = message.messageGroup;
  // D1: a DLQ message names where it came from, as RocketMQ's proxy does.
  if (message.deadLetter !== undefined) {
    system.deadLetterQueue = { topic: message.deadLetter.originTopic, messageId: message.messageId };
  }
  return {
    topic: { name: message.topic },
    userProperties: withDeadLetterProperties(message),
    systemProperties: system,
    body: message.body,
  };
}
