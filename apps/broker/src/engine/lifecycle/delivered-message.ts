import type { DeliveredMessage } from '@ricochet/protocol';
import type { StoredMessage } from '../../store/records.js';

/** The wire form of a stored message for one delivery. Absent fields stay absent on the wire. */
export function toDeliveredMessage(
  message: StoredMessage,
  deliveryAttempt: number,
  receiptHandle: string,
): DeliveredMessage {
  const delivered: DeliveredMessage = {
    messageId: message.messageId,
    topic: message.topic,
    body: message.body,
    bornAt: message.bornAt,
    deliveryAttempt,
    offset: message.offset,
    receiptHandle,
  };
  if (message.tag !== undefined) delivered.tag = message.tag;
  if (message.keys !== undefined) delivered.keys = [...message.keys];
  if (message.messageGroup !== undefined) delivered.messageGroup = message.messageGroup;
  if (message.properties !== undefined) delivered.properties = { ...message.properties };
  if (message.deadLetter !== undefined) {
    const { originTopic, attempts, reason, deadLetteredAt, cause, firstFailedAt } = message.deadLetter;
    // X6: the failure record, when the copy has one (copies made before it existed have none).
    delivered.deadLetter = {
      originTopic,
      attempts,
      reason,
      deadLetteredAt,
      ...(cause === undefined ? {} : { cause }),
      ...(firstFailedAt === undefined ? {} : { firstFailedAt }),
    };
  }
  return delivered;
}
