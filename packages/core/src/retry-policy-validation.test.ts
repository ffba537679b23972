import { describe, expect, it } from 'vitest';
import { DEFAULT_FIFO_RETRY_POLICY, DEFAULT_PUSH_RETRY_POLICY } from './retry-policy.js';
import { MAX_RETRY_DELAY_MS, validateRetryPolicy } from './retry-policy-validation.js';

describe('validateRetryPolicy', () => {
  it('accepts the defaults and returns a copy without stray fields', () => {
    expect(validateRetryPolicy(DEFAULT_PUSH_RETRY_POLICY)).toEqual({
      ok: true,
      policy: DEFAULT_PUSH_RETRY_POLICY,
    });
    expect(validateRetryPolicy({ ...DEFAULT_FIFO_RETRY_POLICY, extra: 1 })).toEqual({
      ok: true,
      policy: { type: 'fixed', delayMs: 3_000 },
    });
  });

  it('accepts a jitter on a stepped or fixed policy, and drops one of 0 (absent means 0, X3)', () => {
    const stepped = { type: 'stepped', delaysMs: [100, 200], jitter: 0.25 };
    expect(validateRetryPolicy(stepped)).toEqual({ ok: true, policy: stepped });
    expect(validateRetryPolicy({ type: 'fixed', delayMs: 50, jitter: 0 })).toEqual({
      ok: true,
      policy: { type: 'fixed', delayMs: 50 },
    });
  });

  it.each([1, -0.1, Number.NaN, '0.2'])('refuses a stepped or fixed policy’s jitter of %s', (jitter) => {
    for (const policy of [
      { type: 'stepped', delaysMs: [100], jitter },
      { type: 'fixed', delayMs: 100, jitter },
    ]) {
      const result = validateRetryPolicy(policy);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.issues.map((issue) => issue.path)).toEqual([['jitter']]);
    }
  });

  it('accepts an exponential policy', () => {
    const policy = { type: 'exponential', initialMs: 10, multiplier: 1.6, maxMs: 1_000, jitter: 0.2 };
    expect(validateRetryPolicy(policy)).toEqual({ ok: true, policy });
  });

  it.each([
    [null, [], 'a retry policy must be an object, got null'],
    [[1], [], 'a retry policy must be an object, got an array'],
    [{ type: 'linear' }, ['type'], 'type must be one of "stepped", "fixed", "exponential", got "linear"'],
    [
      { type: 'fixed' },
      ['delayMs'],
      `delayMs must be a whole number of milliseconds from 0 to ${MAX_RETRY_DELAY_MS}, got nothing`,
    ],
    [
      { type: 'fixed', delayMs: 1.5 },
      ['delayMs'],
      `delayMs must be a whole number of milliseconds from 0 to ${MAX_RETRY_DELAY_MS}, got 1.5`,
    ],
    [{ type: 'stepped', delaysMs: [] }, ['delaysMs'], 'delaysMs must list 1 to 64 delays, got 0'],
    [{ type: 'stepped', delaysMs: 'often' }, ['delaysMs'], 'delaysMs must be an array, got "often"'],
    [
      { type: 'stepped', delaysMs: [10, -5] },
      ['delaysMs', 1],
      `delaysMs[1] must be a whole number of milliseconds from 0 to ${MAX_RETRY_DELAY_MS}, got -5`,
    ],
    [
      { type: 'fixed', delayMs: MAX_RETRY_DELAY_MS + 1 },
      ['delayMs'],
      `delayMs must be a whole number of milliseconds from 0 to ${MAX_RETRY_DELAY_MS}, got ${MAX_RETRY_DELAY_MS + 1}`,
    ],
  ])('rejects %j at %j: %s', (value, path, message) => {
    expect(validateRetryPolicy(value)).toEqual({ ok: false, issues: [{ path, message }] });
  });

  it('reports every problem of an exponential policy at once', () => {
    const result = validateRetryPolicy({
      type: 'exponential',
      initialMs: 500,
      multiplier: 0.5,
      maxMs: 100,
      jitter: 1,
    });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues.map((issue) => issue.path[0])).toEqual(['multiplier', 'jitter', 'maxMs']);
    expect(result.issues[2]?.message).toBe('maxMs (100) must not be below initialMs (500)');
  });
});
