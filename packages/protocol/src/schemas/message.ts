import { z } from 'zod';
import { MAX_MESSAGE_GROUP_BYTES, utf8ByteLength } from '../limits.js';
import {
  bytesSchema,
  durationMsSchema,
  messageIdSchema,
  receiptHandleSchema,
  subscribableTopicSchema,
  tagSchema,
  timestampMsSchema,
  topicNameSchema,
} from './primitives.js';

/** The largest `delayMs` the wire accepts; the broker applies its own, usually smaller, horizon. */
const MAX_WIRE_DELAY_MS = 366 * 24 * 60 * 60 * 1_000;

const messageGroupSchema = z
  .string()
  .min(1)
  .refine(
    (group) => utf8ByteLength(group) < MAX_MESSAGE_GROUP_BYTES,
    `a message group is shorter than ${MAX_MESSAGE_GROUP_BYTES} UTF-8 bytes`,
  );

/**
 * The fields every message has, whichever way it travels. The schemas below list them in wire
 * order (the order a decoded frame's keys come out in), with `topic` right after `messageId`.
 */
const messageIdField = { messageId: messageIdSchema };
const messageContentFields = {
  tag: tagSchema.exactOptional(),
  keys: z.array(z.string().min(1).max(128)).max(32).exactOptional(),
  messageGroup: messageGroupSchema.exactOptional(),
  properties: z.record(z.string().min(1).max(256), z.string()).exactOptional(),
  body: bytesSchema,
  bornAt: timestampMsSchema,
};

/**
 * A message as a producer sends it. At most one of `deliverAt`, `delayMs` and `delayLevel` makes
 * it a delay message (T1). Size limits (body, properties) are the broker's to enforce, because
 * they are configurable and answer with `MESSAGE_TOO_LARGE`, not `BAD_REQUEST`.
 */
export const outgoingMessageSchema = z
  .object({
    ...messageIdField,
    topic: topicNameSchema,
    ...messageContentFields,
    deliverAt: timestampMsSchema.exactOptional(),
    delayMs: durationMsSchema(0, MAX_WIRE_DELAY_MS).exactOptional(),
    delayLevel: z.number().int().min(1).max(18).exactOptional(),
  })
  .refine(
    (message) =>
      [message.deliverAt, message.delayMs, message.delayLevel].filter((value) => value !== undefined)
        .length <= 1,
    { message: 'give at most one of deliverAt, delayMs and delayLevel', path: ['deliverAt'] },
  );

export type OutgoingMessage = z.infer<typeof outgoingMessageSchema>;

/** What a dead-lettered message carries about its past (D1). */
export const deadLetterInfoSchema = z.object({
  originTopic: topicNameSchema,
  attempts: z.number().int().min(0),
  reason: z.string(),
  deadLetteredAt: timestampMsSchema,
  /**
   * Why it went to the DLQ, machine-readable (X6): `maxRetries`, `consumptionTimeout`,
   * `retryBudget`, `deadLetterNow`, `nonRetryable`, or one added later. Absent from messages
   * dead-lettered before the broker recorded it.
   */
  cause: z.string().max(64).exactOptional(),
  /** When its first failure happened (X6); absent when unknown. */
  firstFailedAt: timestampMsSchema.exactOptional(),
});

export type DeadLetterInfo = z.infer<typeof deadLetterInfoSchema>;

/** A message as the broker delivers it to a consumer: leased, with its attempt number. */
export const deliveredMessageSchema = z.object({
  ...messageIdField,
  topic: subscribableTopicSchema,
  ...messageContentFields,
  /** 1 on the first delivery (P6). */
  deliveryAttempt: z.number().int().min(1),
  /** The position of the message in its topic's log. */
  offset: z.number().int().min(0),
  receiptHandle: receiptHandleSchema,
  /** Present on messages read from a `%DLQ%<group>` topic (D1). */
  deadLetter: deadLetterInfoSchema.exactOptional(),
});

export type DeliveredMessage = z.infer<typeof deliveredMessageSchema>;
