import { describe, expect, it } from 'vitest';
import { resolveGroupConfig } from './group-config.js';
import { DEFAULT_FIFO_RETRY_POLICY, DEFAULT_PUSH_RETRY_POLICY } from './retry-policy.js';

describe('resolveGroupConfig', () => {
  it('fills the defaults of DESIGN.md §2', () => {
    expect(resolveGroupConfig()).toEqual({
      maxRetries: 16,
      retryPolicy: DEFAULT_PUSH_RETRY_POLICY,
      fifo: false,
      consumeMode: 'clustering',
      consumptionTimeoutMs: 900_000,
      startFrom: 'latest',
      broadcastInstanceTtlMs: 24 * 60 * 60 * 1_000,
    });
  });

  it('gives FIFO groups the fixed 3 s policy unless one is named (P5)', () => {
    expect(resolveGroupConfig({ fifo: true }).retryPolicy).toEqual(DEFAULT_FIFO_RETRY_POLICY);
    const own = { type: 'fixed', delayMs: 50 } as const;
    expect(resolveGroupConfig({ fifo: true, retryPolicy: own }).retryPolicy).toEqual(own);
  });

  it('keeps the fields it is given', () => {
    const config = resolveGroupConfig({ maxRetries: 2, startFrom: 'earliest', consumeMode: 'broadcasting' });
    expect(config).toMatchObject({ maxRetries: 2, startFrom: 'earliest', consumeMode: 'broadcasting' });
  });
});
