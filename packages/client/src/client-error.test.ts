import { RicochetError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { badRequestError, CLIENT_ERROR_CODES, ClientError } from './client-error.js';

describe('ClientError', () => {
  it.each([
    ['CONNECTION_CLOSED', true],
    ['TIMEOUT', true],
    ['CONNECT_TIMEOUT', true],
    ['ABORTED', false],
    ['CLIENT_CLOSED', false],
    ['PROTOCOL_ERROR', false],
    ['TLS_ERROR', false],
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
      'CONNECT_TIMEOUT',
      'PROTOCOL_ERROR',
      'TIMEOUT',
      'TLS_ERROR',
    ]);
    const cause = new Error('socket hang up');
    expect(new ClientError('CONNECTION_CLOSED', 'dropped', { cause }).cause).toBe(cause);
  });

  it.each([400, 413] as const)('carries the catalogue code %s for a local check, not retryable', (code) => {
    const error = new ClientError(code, 'refused', { details: { maxBodyBytes: 10 } });
    expect(error).toBeInstanceOf(RicochetError);
    expect(error).toMatchObject({
      name: 'ClientError',
      code,
      retryable: false,
      details: { maxBodyBytes: 10 },
    });
  });

  it('builds the 400 of a refused option or argument, keeping the cause', () => {
    const cause = new TypeError('Invalid URL');
    const error = badRequestError("endpoint 'x' is not a URL", { cause });
    expect(error).toMatchObject({ name: 'ClientError', code: 400, retryable: false, cause });
    expect(error.message).toBe("endpoint 'x' is not a URL");
  });
});
