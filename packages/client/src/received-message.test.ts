import { FakeBroker } from '@ricochet/client-testkit';
import { describe, expect, it } from 'vitest';
import { ReceivedMessage, receiptHandleOf, replaceReceiptHandle } from './received-message.js';

describe('ReceivedMessage', () => {
  it('exposes the delivered fields, with empty keys and properties when absent', () => {
    const message = new ReceivedMessage(FakeBroker.deliveredMessage({ deliveryAttempt: 3, offset: 7 }));
    expect(message).toMatchObject({
      messageId: '0193a1f4c2d87b3e9f6a5c4b3e2d1f00',
      topic: 'orders',
      tag: undefined,
      keys: [],
      messageGroup: undefined,
      properties: {},
      bornAt: 1_763_750_000_000,
      deliveryAttempt: 3,
      offset: 7,
      deadLetter: undefined,
    });
    expect(message.text()).toBe('{"orderId":1042}');
    // Frozen like copied ones, so one shared empty array and object serve every such message.
    expect(Object.isFrozen(message.keys)).toBe(true);
    expect(Object.isFrozen(message.properties)).toBe(true);
  });

  it('copies keys, properties and dead-letter info, frozen', () => {
    const delivered = FakeBroker.deliveredMessage({
      topic: '%DLQ%billing',
      tag: 'paid',
      keys: ['order-1042'],
      messageGroup: 'customer-7',
      properties: { region: 'eu' },
      deadLetter: { originTopic: 'orders', attempts: 17, reason: 'timeout', deadLetteredAt: 5 },
    });
    const message = new ReceivedMessage(delivered);
    expect(message.keys).toEqual(['order-1042']);
    expect(message.properties).toEqual({ region: 'eu' });
    expect(message.deadLetter).toEqual({
      originTopic: 'orders',
      attempts: 17,
      reason: 'timeout',
      deadLetteredAt: 5,
    });
    expect(Object.isFrozen(message.keys)).toBe(true);
    expect(Object.isFrozen(message.properties)).toBe(true);
    expect(message.keys).not.toBe(delivered.keys);
  });

  it('keeps the receipt handle off the public surface, swappable by the consumer packages', () => {
    const message = new ReceivedMessage(FakeBroker.deliveredMessage({ receiptHandle: 'h-1' }));
    expect(Object.keys(message)).not.toContain('receiptHandle');
    expect(JSON.stringify(message)).not.toContain('h-1');
    expect(receiptHandleOf(message)).toBe('h-1');
    replaceReceiptHandle(message, 'h-2');
    expect(receiptHandleOf(message)).toBe('h-2');
  });
});
