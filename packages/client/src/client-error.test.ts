import { RicochetError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { CLIENT_ERROR_CODES, ClientError } from './client-error.js';

describe('ClientError', () => {
  it.each([
    ['CONNECTION_CLOSED', true],
    ['TIMEOUT', true],
    ['ABORTED', false],
    ['CLIENT_CLOSED', false],
    ['PROTOCOL_ERROR', false],
  ] as const)('%s is retryable: %s', (code, retryable) => {
    const error = new ClientError(code, 'what happened');
    expect(error).toBeInstanceOf(RicochetError);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ name: 'ClientError', code, retryable, message: 'what happened' });
  });

  it('lists every code in the table, and keeps the cause', () => {
    expect(Object.keys(CLIENT_ERROR_CODES).sort()).toEqual([
      'ABORTED',
      'CLIENT_CLOSED',
      'CONNECTION_CLOSED',
      'PROTOCOL_ERROR',
      'TIMEOUT',
    ]);
    const cause = new Error('socket hang up');
    expect(new ClientError('CONNECTION_CLOSED', 'dropped', { cause }).cause).toBe(cause);
  });
});
