import { describe, expect, it } from 'vitest';
import { prepareMessage } from './outgoing-message.js';

describe('prepareMessage', () => {
  it('lays a message out in the wire’s key order, with only the fields given', () => {
    const full = prepareMessage(
      {
        delayMs: 5,
        properties: { a: 'b' },
        messageGroup: 'g',
        keys: ['k'],
        tag: 't',
        body: 'x',
        topic: 'orders',
        messageId: '019aa6b1f2c07d3e8a41b5c6d7e8f901',
      },
      1024,
      7,
    ).message;
    expect(Object.keys(full)).toEqual([
      'messageId',
      'topic',
      'tag',
      'keys',
      'messageGroup',
      'properties',
      'body',
      'bornAt',
      'delayMs',
    ]);
    expect(Object.keys(prepareMessage({ topic: 'orders', body: 'x' }, 1024, 7).message)).toEqual([
      'messageId',
      'topic',
      'body',
      'bornAt',
    ]);
  });

  it('refuses a topic that is not a name, before and after sends to a valid one', () => {
    const send = (topic: string) => () => prepareMessage({ topic, body: 'x' }, 1024, 7);
    expect(send('bad topic')).toThrow(/topic/);
    expect(send('orders')).not.toThrow();
    expect(send('orders')).not.toThrow();
    expect(send('bad topic')).toThrow(/topic/);
  });
});
