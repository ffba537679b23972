import { describe, expect, it } from 'vitest';
import { resolveGroupConfig, resolveTopicConfig } from './group-config.js';
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
      dlqRetentionMs: 14 * 24 * 60 * 60 * 1_000,
    });
  });

  it('gives FIFO groups the fixed 3 s policy unless one is named (P5)', () => {
    expect(resolveGroupConfig({ fifo: true }).retryPolicy).toEqual(DEFAULT_FIFO_RETRY_POLICY);
    const own = { type: 'fixed', delayMs: 50 } as const;
    expect(resolveGroupConfig({ fifo: true, retryPolicy: own }).retryPolicy).toEqual(own);
  });

  it("spells out a topic config's retention: 72 h unless it names one (DESIGN.md §5)", () => {
    expect(resolveTopicConfig({ type: 'normal' })).toEqual({
      type: 'normal',
      retentionMs: 72 * 60 * 60 * 1_000,
    });
    const own = { type: 'fifo', retentionMs: 5, retentionBytes: 7 } as const;
    expect(resolveTopicConfig(own)).toBe(own);
  });

  it('keeps the fields it is given', () => {
    const config = resolveGroupConfig({ maxRetries: 2, startFrom: 'earliest', consumeMode: 'broadcasting' });
    expect(config).toMatchObject({ maxRetries: 2, startFrom: 'earliest', consumeMode: 'broadcasting' });
  });
});
