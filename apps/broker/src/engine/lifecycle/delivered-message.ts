import { type DeliveredMessage, PackedDelivery } from '@ricochet/protocol';
import type { StoredMessage } from '../../store/records.js';
import { deliveredDeadLetter, PackedStoredMessage } from '../../store/schema/stored-message.js';

/**
 * The wire form of a stored message for one delivery. Absent fields stay absent on the wire.
 *
 * A message read from (or stored with) a layout 2 record carries the bytes of its delivered fields:
 * the delivery copies them (a {@link PackedDelivery}) instead of encoding each field again. Any
 * other message (a send's, as the engine built it) is encoded field by field.
 */
export function toDeliveredMessage(
  message: StoredMessage,
  deliveryAttempt: number,
  receiptHandle: string,
): DeliveredMessage {
  if (message instanceof PackedStoredMessage) {
    const fields = PackedStoredMessage.deliveredFieldsOf(message);
    const bytes = PackedStoredMessage.deliveredBytesOf(message);
    return new PackedDelivery(fields, bytes, deliveryAttempt, message.offset, receiptHandle);
  }
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
  // X6: the failure record, when the copy has one (copies made before it existed have none).
  if (message.deadLetter !== undefined) delivered.deadLetter = deliveredDeadLetter(message.deadLetter);
  return delivered;
}
