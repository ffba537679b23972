import { ClientError } from '@ricochet/client';
import { describe, expect, it } from 'vitest';
import {
  ConsumeResult,
  MAX_FAILURE_REASON_LENGTH,
  MAX_RETRY_AFTER_MS,
  outcomeOfResult,
  outcomeOfThrow,
  truncateReason,
} from './consume-result.js';

describe('ConsumeResult', () => {
  it('has frozen SUCCESS and FAILURE values', () => {
    expect(ConsumeResult.SUCCESS).toEqual({ type: 'success' });
    expect(ConsumeResult.FAILURE).toEqual({ type: 'failure' });
    expect(Object.isFrozen(ConsumeResult.SUCCESS)).toBe(true);
    expect(Object.isFrozen(ConsumeResult.FAILURE)).toBe(true);
  });

  it.each([0, 1, 5_000, MAX_RETRY_AFTER_MS])('accepts retryAfter(%s)', (retryAfterMs) => {
    expect(ConsumeResult.retryAfter(retryAfterMs)).toEqual({ type: 'retryAfter', retryAfterMs });
  });

  it.each([-1, MAX_RETRY_AFTER_MS + 1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])(
    'refuses retryAfter(%s) with 400',
    (retryAfterMs) => {
      expect(() => ConsumeResult.retryAfter(retryAfterMs)).toThrow(ClientError);
      expect(() => ConsumeResult.retryAfter(retryAfterMs)).toThrow(
        expect.objectContaining({ code: 400, retryable: false }),
      );
    },
  );
});

describe('ConsumeResult.deadLetter (D3)', () => {
  it('dead-letters with or without a reason, the reason cut to the protocol limit', () => {
    expect(outcomeOfResult(ConsumeResult.deadLetter())).toEqual({ outcome: { type: 'deadLetter' } });
    expect(outcomeOfResult(ConsumeResult.deadLetter('unparseable order'))).toEqual({
      outcome: { type: 'deadLetter', reason: 'unparseable order' },
    });
    const long = outcomeOfResult(ConsumeResult.deadLetter('x'.repeat(5_000))).outcome;
    expect(long.type === 'deadLetter' && long.reason?.length).toBe(MAX_FAILURE_REASON_LENGTH);
  });

  it('turns a hand-made deadLetter with a reason that is not a string into a plain failure', () => {
    const { outcome, problem } = outcomeOfResult({ type: 'deadLetter', reason: 42 });
    expect(outcome.type).toBe('nack');
    expect(problem?.code).toBe(400);
  });
});

describe('ConsumeResult.postpone (X4)', () => {
  it('is a nack with retryAfterMs and postpone, the delay an old broker would use', () => {
    expect(outcomeOfResult(ConsumeResult.postpone(2_000))).toEqual({
      outcome: {
        type: 'nack',
        reason: 'the listener postponed it for 2000 ms',
        retryAfterMs: 2_000,
        postpone: true,
      },
    });
  });

  it.each([-1, 1.5, MAX_RETRY_AFTER_MS + 1])('refuses postponeMs %s', (postponeMs) => {
    expect(() => ConsumeResult.postpone(postponeMs)).toThrow(ClientError);
    const handMade = outcomeOfResult({ type: 'postpone', postponeMs });
    expect(handMade.problem).toBeInstanceOf(ClientError);
    expect(handMade.outcome).not.toHaveProperty('postpone');
  });
});

describe('outcomeOfResult', () => {
  it('maps SUCCESS to ack, FAILURE and retryAfter to nack with a reason', () => {
    expect(outcomeOfResult(ConsumeResult.SUCCESS)).toEqual({ outcome: { type: 'ack' } });
    expect(outcomeOfResult(ConsumeResult.FAILURE)).toEqual({
      outcome: { type: 'nack', reason: 'the listener returned FAILURE' },
    });
    expect(outcomeOfResult(ConsumeResult.retryAfter(2_500))).toEqual({
      outcome: { type: 'nack', reason: 'the listener asked for a retry after 2500 ms', retryAfterMs: 2_500 },
    });
  });

  it.each<[string, unknown, string]>([
    ['undefined', undefined, 'the listener returned undefined, not a ConsumeResult'],
    ['a string', 'SUCCESS', "the listener returned the string 'SUCCESS', not a ConsumeResult"],
    ['true', true, 'the listener returned boolean true, not a ConsumeResult'],
    ['an unknown type', { type: 'ok' }, "the listener returned an object of type 'ok', not a ConsumeResult"],
    ['an object', {}, 'the listener returned an object, not a ConsumeResult'],
  ])('fails %s with a clear reason and a 400 problem', (_, value, reason) => {
    const { outcome, problem } = outcomeOfResult(value);
    expect(outcome).toEqual({ type: 'nack', reason });
    expect(problem).toBeInstanceOf(ClientError);
    expect(problem).toMatchObject({ code: 400, message: reason });
  });

  it('fails a hand-made retryAfter with a bad delay, without the delay', () => {
    const { outcome, problem } = outcomeOfResult({ type: 'retryAfter', retryAfterMs: -5 });
    expect(outcome).toEqual({
      type: 'nack',
      reason:
        'the listener returned retryAfter with an invalid delay: retryAfterMs must be an integer from 0 to 86400000, got -5',
    });
    expect(problem).toMatchObject({ code: 400 });
  });
});

describe('outcomeOfThrow', () => {
  it("uses the error's message, or its name when the message is empty", () => {
    expect(outcomeOfThrow(new Error('payment service answered 503'), false)).toEqual({
      type: 'nack',
      reason: 'payment service answered 503',
    });
    expect(outcomeOfThrow(new TypeError(''), false)).toEqual({ type: 'nack', reason: 'TypeError' });
    expect(outcomeOfThrow('plain string', false)).toEqual({ type: 'nack', reason: 'plain string' });
    expect(outcomeOfThrow(42, false)).toEqual({ type: 'nack', reason: 'the listener threw number 42' });
  });

  it('dead-letters a non-retryable error at once, with its message as the reason (X1)', () => {
    expect(outcomeOfThrow(new Error('not an order'), true)).toEqual({
      type: 'deadLetter',
      reason: 'not an order',
      nonRetryable: true,
    });
  });

  it('truncates a long message to the 1 024 characters a nack carries', () => {
    const outcome = outcomeOfThrow(new Error('x'.repeat(5_000)), false);
    if (outcome.type !== 'nack') throw new Error('expected nack');
    expect(outcome.reason).toHaveLength(MAX_FAILURE_REASON_LENGTH);
    expect(outcome.reason.endsWith('…')).toBe(true);
  });
});

describe('truncateReason', () => {
  it('keeps a reason of exactly the limit', () => {
    const reason = 'y'.repeat(MAX_FAILURE_REASON_LENGTH);
    expect(truncateReason(reason)).toBe(reason);
  });

  it('never cuts a surrogate pair in half', () => {
    // 1 022 ASCII characters, then emoji (two UTF-16 units each): the cut would fall inside one.
    const reason = `${'a'.repeat(1_022)}${'😀'.repeat(10)}`;
    const truncated = truncateReason(reason);
    expect(truncated.length).toBeLessThanOrEqual(MAX_FAILURE_REASON_LENGTH);
    expect(truncated).toBe(`${'a'.repeat(1_022)}…`);
  });
});
