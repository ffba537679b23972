import type { DeliveredMessage } from '@ricochet/protocol';

/**
 * The failure record of a message read from a `%DLQ%<group>` topic (D1, X6) as a RocketMQ client
 * reads it: RocketMQ's own names where it has them — the system property `dead_letter_queue`
 * (origin topic and message id), the user properties `DLQ_ORIGIN_TOPIC`, `DLQ_ORIGIN_MESSAGE_ID`
 * (`MessageConst`) and `RECONSUME_TIME` (the attempts) — and `RICOCHET_DLQ_*` for what RocketMQ
 * does not record: the cause, the reason and the times (epoch ms, in decimal).
 */
export const DLQ_PROPERTY = {
  originTopic: 'DLQ_ORIGIN_TOPIC',
  originMessageId: 'DLQ_ORIGIN_MESSAGE_ID',
  attempts: 'RECONSUME_TIME',
  cause: 'RICOCHET_DLQ_CAUSE',
  reason: 'RICOCHET_DLQ_REASON',
  deadLetteredAt: 'RICOCHET_DLQ_DEAD_LETTERED_AT',
  firstFailedAt: 'RICOCHET_DLQ_FIRST_FAILED_AT',
} as const;

/** The user properties of a delivered message with its DLQ record added; the message's own win a clash. */
/** What a message without properties has: one object for all of them, not one per delivery. */
const NO_PROPERTIES: Readonly<Record<string, string>> = Object.freeze({});

export function withDeadLetterProperties(message: DeliveredMessage): Readonly<Record<string, string>> {
  const own = message.properties ?? NO_PROPERTIES;
  const record = message.deadLetter;
  if (record === undefined) return own;
  return {
    [DLQ_PROPERTY.originTopic]: record.originTopic,
    [DLQ_PROPERTY.originMessageId]: message.messageId,
    [DLQ_PROPERTY.attempts]: String(record.attempts),
    ...(record.cause === undefined ? {} : { [DLQ_PROPERTY.cause]: record.cause }),
    [DLQ_PROPERTY.reason]: record.reason,
    [DLQ_PROPERTY.deadLetteredAt]: String(record.deadLetteredAt),
    ...(record.firstFailedAt === undefined
      ? {}
      : { [DLQ_PROPERTY.firstFailedAt]: String(record.firstFailedAt) }),
    ...own,
  };
}
