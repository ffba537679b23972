import { ClientError, ReceivedMessage } from '@ricochet/client';
import { deliveredMessage } from '@ricochet/client-testkit';
import { BrokerError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { type Delivery, problemsOf, type ResultEntry, releaseOf, resultOf } from './delivery-results.js';

const subscription = { id: 4, sessionId: 's1', active: true };
const delivery: Delivery = {
  message: new ReceivedMessage(deliveredMessage({ messageId: 'm1', receiptHandle: 'h1' })),
  subscription,
};
const settledBy = { receiptHandle: 'h1', messageId: 'm1', sessionId: 's1', creditTo: subscription };

describe('resultOf', () => {
  it('acks a success, crediting the subscription the delivery came through', () => {
    expect(resultOf(delivery, { type: 'ack' })).toEqual({ action: 'ack', ...settledBy });
  });

  it('nacks a failure with its reason, and its own delay when it has one', () => {
    expect(resultOf(delivery, { type: 'nack', reason: 'boom' })).toEqual({
      action: 'nack',
      reason: 'boom',
      ...settledBy,
    });
    expect(resultOf(delivery, { type: 'nack', reason: 'later', retryAfterMs: 500 })).toEqual({
      action: 'nack',
      reason: 'later',
      retryAfterMs: 500,
      ...settledBy,
    });
  });

  it('dead-letters with or without a reason (D3)', () => {
    expect(resultOf(delivery, { type: 'deadLetter' })).toEqual({
      action: 'nack',
      deadLetter: true,
      ...settledBy,
    });
    expect(resultOf(delivery, { type: 'deadLetter', reason: 'poison' })).toEqual({
      action: 'nack',
      deadLetter: true,
      reason: 'poison',
      ...settledBy,
    });
  });
});

describe('releaseOf', () => {
  it('releases without a credit', () => {
    expect(releaseOf('h9', 'm9', 's2')).toEqual({
      action: 'release',
      receiptHandle: 'h9',
      messageId: 'm9',
      sessionId: 's2',
      creditTo: undefined,
    });
  });
});

describe('problemsOf', () => {
  const results: ResultEntry[] = [resultOf(delivery, { type: 'ack' }), releaseOf('h2', 'm2', 's1')];

  it('names each refused result by its message', () => {
    const [problem, ...rest] = problemsOf(results, {
      failures: [{ index: 1, code: 410, message: 'lease expired' }],
    });
    expect(rest).toEqual([]);
    expect(problem).toBeInstanceOf(BrokerError);
    expect(problem).toMatchObject({
      code: 410,
      message: 'the broker refused the release of message m2: lease expired',
      details: { messageId: 'm2' },
    });
  });

  it('reports a frame that failed as a whole, unless its connection dropped or closed (C2)', () => {
    const timeout = new ClientError('TIMEOUT', 'no answer');
    expect(problemsOf(results, { error: timeout })).toEqual([timeout]);
    expect(problemsOf(results, { error: new ClientError('CONNECTION_CLOSED', 'dropped') })).toEqual([]);
    expect(problemsOf(results, { error: new ClientError('CLIENT_CLOSED', 'closed') })).toEqual([]);
    expect(problemsOf(results, { error: new Error('socket hang up') })).toEqual([]);
  });
});
