import { describe, expect, it } from 'vitest';
import { isNonRetryable, NonRetryableError } from './non-retryable-error.js';

describe('NonRetryableError (X1)', () => {
  it('is an Error named after its class, with its cause', () => {
    const error = new NonRetryableError('not an order', { cause: 'm-1' });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('NonRetryableError');
    expect(error.message).toBe('not an order');
    expect(error.cause).toBe('m-1');
  });
});

describe('isNonRetryable', () => {
  it('always takes a NonRetryableError, and other errors only when the option accepts them', () => {
    expect(isNonRetryable(new NonRetryableError('x'), undefined)).toBe(true);
    expect(isNonRetryable(new NonRetryableError('x'), () => false)).toBe(true);
    expect(isNonRetryable(new SyntaxError('x'), undefined)).toBe(false);
    const onlySyntax = (error: unknown) => error instanceof SyntaxError;
    expect(isNonRetryable(new SyntaxError('x'), onlySyntax)).toBe(true);
    expect(isNonRetryable(new TypeError('x'), onlySyntax)).toBe(false);
  });

  it('counts a predicate that throws, or answers anything but true, as no', () => {
    const throwing = () => {
      throw new Error('bug in the predicate');
    };
    expect(isNonRetryable(new Error('x'), throwing)).toBe(false);
    expect(isNonRetryable(new Error('x'), (() => 'yes') as unknown as (error: unknown) => boolean)).toBe(
      false,
    );
  });
});
