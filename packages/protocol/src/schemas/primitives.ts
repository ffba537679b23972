import { z } from 'zod';
import {
  GROUP_NAME_PATTERN,
  isSubscribableTopic,
  MESSAGE_ID_PATTERN,
  TAG_PATTERN,
  TOPIC_NAME_PATTERN,
} from '../names.js';
import { parseTagFilter } from '../tag-filter.js';

/** A request id chosen by the client, echoed by the broker's answer: an unsigned 32-bit integer. */
export const requestIdSchema = z.number().int().min(0).max(0xffff_ffff);

/** Milliseconds since the Unix epoch. */
export const timestampMsSchema = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** A whole, non-negative number of milliseconds up to `maxMs`. */
export function durationMsSchema(minMs: number, maxMs: number) {
  return z.number().int().min(minMs).max(maxMs);
}

/**
 * Binary data. MessagePack `bin` decodes to a Node `Buffer`; it is re-viewed (not copied) as a
 * plain `Uint8Array` so that decoded frames look the same on every runtime.
 */
export const bytesSchema = z
  .instanceof(Uint8Array, { message: 'expected bytes (MessagePack bin)' })
  .transform(
    (bytes): Uint8Array =>
      bytes.constructor === Uint8Array
        ? bytes
        : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
  );

export const topicNameSchema = z
  .string()
  .regex(TOPIC_NAME_PATTERN, 'a topic name is 1–127 of A–Z a–z 0–9 _ . -');

/** A topic a consumer may read: a user topic or a group's `%DLQ%<group>`. */
export const subscribableTopicSchema = z
  .string()
  .refine(isSubscribableTopic, 'a subscribed topic is a topic name or %DLQ%<group>');

export const groupNameSchema = z
  .string()
  .regex(GROUP_NAME_PATTERN, 'a group name is 1–120 of A–Z a–z 0–9 _ . -');

export const messageIdSchema = z
  .string()
  .regex(MESSAGE_ID_PATTERN, 'a message id is 1–128 of A–Z a–z 0–9 _ . : -');

export const tagSchema = z
  .string()
  .regex(TAG_PATTERN, 'a tag is 1–128 characters without white space, | or *');

/** A tag expression: `*` or tags joined by `||`. */
export const tagExpressionSchema = z.string().superRefine((expression, ctx) => {
  const parsed = parseTagFilter(expression);
  if (!parsed.ok) ctx.addIssue({ code: 'custom', message: parsed.message });
});

/** Topic → tag expression, 1 to 64 topics. */
export const subscriptionsSchema = z
  .record(subscribableTopicSchema, tagExpressionSchema)
  .refine((subscriptions) => {
    const count = Object.keys(subscriptions).length;
    return count >= 1 && count <= 64;
  }, 'subscriptions name 1 to 64 topics');

/** An opaque lease token the broker hands out with every delivery. */
export const receiptHandleSchema = z.string().min(1).max(512);

/** An error as it travels inside a frame. */
export const errorPayloadSchema = z.object({
  code: z.number().int().min(0).max(9999),
  message: z.string().max(4_096),
  details: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).exactOptional(),
});

export type ErrorPayload = z.infer<typeof errorPayloadSchema>;
