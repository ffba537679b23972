import { MAX_PROPERTIES_BYTES } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { prepareMessage, withTraceContext } from './outgoing-message.js';

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

describe('withTraceContext', () => {
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

  it('adds the context to the properties, keeping the application’s own and its own traceparent', () => {
    const plain = withTraceContext(prepareMessage({ topic: 'orders', body: 'x' }, 1024, 0), { traceparent });
    expect(plain.message.properties).toEqual({ traceparent });
    const forwarded = withTraceContext(
      prepareMessage({ topic: 'orders', body: 'x', properties: { traceparent: 'theirs', a: 'b' } }, 1024, 0),
      { traceparent, tracestate: 'k=v' },
    );
    expect(forwarded.message.properties).toEqual({ traceparent: 'theirs', a: 'b', tracestate: 'k=v' });
    expect(forwarded.encodedBytesEstimate).toBeGreaterThan(
      prepareMessage({ topic: 'orders', body: 'x', properties: { traceparent: 'theirs', a: 'b' } }, 1024, 0)
        .encodedBytesEstimate,
    );
  });

  it('leaves the context out rather than take the properties past 16 KiB', () => {
    const full = prepareMessage(
      { topic: 'orders', body: 'x', properties: { big: 'x'.repeat(MAX_PROPERTIES_BYTES - 3) } },
      1024,
      0,
    );
    expect(withTraceContext(full, { traceparent })).toBe(full);
  });
});
