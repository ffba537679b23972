import type { DeliveredMessage } from '@ricochet/protocol';

/** A delivered message with the given fields over plausible defaults. */
export function deliveredMessage(fields: Partial<DeliveredMessage> = {}): DeliveredMessage {
  return {
    messageId: '0193a1f4c2d87b3e9f6a5c4b3e2d1f00',
    topic: 'orders',
    body: new TextEncoder().encode('{"orderId":1042}'),
    bornAt: 1_763_750_000_000,
    deliveryAttempt: 1,
    offset: 0,
    receiptHandle: 'h-0',
    ...fields,
  };
}
