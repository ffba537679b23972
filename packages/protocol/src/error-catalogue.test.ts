import { describe, expect, it } from 'vitest';
import { ERROR_CODES, type ErrorName, errorNameOf, isRetryableCode } from './error-catalogue.js';
import { BrokerError, RicochetError } from './ricochet-error.js';

describe('ERROR_CODES', () => {
  it('holds the codes of DESIGN.md §6', () => {
    const codes = Object.fromEntries(Object.entries(ERROR_CODES).map(([name, entry]) => [name, entry.code]));
    expect(codes).toEqual({
      BAD_REQUEST: 400,
      UNAUTHORIZED: 401,
      FORBIDDEN: 403,
      NOT_FOUND: 404,
      REQUEST_TIMEOUT: 408,
      TOPIC_TYPE_MISMATCH: 409,
      INVALID_RECEIPT_HANDLE: 410,
      MESSAGE_TOO_LARGE: 413,
      INTERNAL_ERROR: 500,
      BROKER_UNAVAILABLE: 503,
      TOO_MANY_REQUESTS: 530,
    });
  });

  it('marks as retryable exactly what R2 retries', () => {
    const retryable = (Object.keys(ERROR_CODES) as ErrorName[]).filter((name) => ERROR_CODES[name].retryable);
    expect(retryable.sort()).toEqual([
      'BROKER_UNAVAILABLE',
      'INTERNAL_ERROR',
      'REQUEST_TIMEOUT',
      'TOO_MANY_REQUESTS',
    ]);
  });

  it('never uses a code twice', () => {
    const codes = Object.values(ERROR_CODES).map((entry) => entry.code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('maps codes back to names; unknown codes are not retryable', () => {
    expect(errorNameOf(530)).toBe('TOO_MANY_REQUESTS');
    expect(errorNameOf(999)).toBeUndefined();
    expect(isRetryableCode(530)).toBe(true);
    expect(isRetryableCode(410)).toBe(false);
    expect(isRetryableCode(999)).toBe(false);
  });
});

describe('BrokerError', () => {
  it('carries the code, its name, retryability and details', () => {
    const error = BrokerError.of('NOT_FOUND', 'topic "x" does not exist', { topic: 'x' });
    expect(error).toBeInstanceOf(RicochetError);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({
      name: 'BrokerError',
      code: 404,
      errorName: 'NOT_FOUND',
      retryable: false,
      details: { topic: 'x' },
    });
    expect(new BrokerError(530, 'slow down').retryable).toBe(true);
  });

  it('keeps a cause', () => {
    const cause = new Error('disk full');
    expect(new BrokerError(500, 'store failed', { cause }).cause).toBe(cause);
  });
});

describe('RicochetError', () => {
  it('takes local string codes with an explicit retryable flag', () => {
    const error = new RicochetError('CONNECTION_CLOSED', 'closed', { retryable: true });
    expect(error).toMatchObject({ name: 'RicochetError', code: 'CONNECTION_CLOSED', retryable: true });
  });
});
