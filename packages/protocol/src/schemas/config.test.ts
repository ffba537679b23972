import {
  DEFAULT_FIFO_RETRY_POLICY,
  DEFAULT_PUSH_RETRY_POLICY,
  type GroupConfig,
  type GroupConfigInput,
  type RetryPolicy,
  resolveGroupConfig,
  type TopicConfig,
} from '@ricochet/core';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import {
  groupConfigInputSchema,
  groupConfigSchema,
  retryPolicySchema,
  type topicConfigSchema,
} from './config.js';

describe('config shapes equal core types', () => {
  it('retry policy', () => {
    expectTypeOf<z.infer<typeof retryPolicySchema>>().toEqualTypeOf<RetryPolicy>();
  });
  it('group config and its input', () => {
    expectTypeOf<z.infer<typeof groupConfigSchema>>().toEqualTypeOf<GroupConfig>();
    expectTypeOf<z.infer<typeof groupConfigInputSchema>>().toEqualTypeOf<GroupConfigInput>();
  });
  it('topic config', () => {
    expectTypeOf<z.infer<typeof topicConfigSchema>>().toEqualTypeOf<TopicConfig>();
  });
});

describe('retryPolicySchema', () => {
  it('accepts the defaults', () => {
    expect(retryPolicySchema.parse(DEFAULT_PUSH_RETRY_POLICY)).toEqual(DEFAULT_PUSH_RETRY_POLICY);
    expect(retryPolicySchema.parse(DEFAULT_FIFO_RETRY_POLICY)).toEqual(DEFAULT_FIFO_RETRY_POLICY);
  });

  it("reports core's messages at the right path", () => {
    const result = retryPolicySchema.safeParse({ type: 'stepped', delaysMs: [100, -1] });
    expect(result.success).toBe(false);
    expect(result.error?.issues).toMatchObject([
      { path: ['delaysMs', 1], message: expect.stringContaining('delaysMs[1] must be a whole number') },
    ]);
  });
});

describe('groupConfigInputSchema', () => {
  it('accepts the example of DESIGN.md §4', () => {
    const input = groupConfigInputSchema.parse({
      maxRetries: 2,
      retryPolicy: { type: 'stepped', delaysMs: [100, 200] },
    });
    expect(resolveGroupConfig(input)).toMatchObject({
      maxRetries: 2,
      retryPolicy: { delaysMs: [100, 200] },
      fifo: false,
    });
  });

  it('rejects unknown fields, so a typo is not silently ignored', () => {
    expect(groupConfigInputSchema.safeParse({ maxRetry: 2 }).success).toBe(false);
  });

  it('rejects an explicit undefined-like null', () => {
    expect(groupConfigInputSchema.safeParse({ maxRetries: null }).success).toBe(false);
  });

  it("fills pauseOnFailures with core's defaults and checks it (DESIGN.md §11)", () => {
    const input = groupConfigInputSchema.parse({ pauseOnFailures: { pauseMs: 50 } });
    expect(input.pauseOnFailures).toEqual({
      failureRatio: 0.9,
      minOutcomes: 20,
      windowMs: 60_000,
      pauseMs: 50,
      maxPauseMs: 300_000,
    });
    expect(groupConfigSchema.parse(resolveGroupConfig(input))).toEqual(resolveGroupConfig(input));
    expect(groupConfigInputSchema.safeParse({ pauseOnFailures: { failureRatio: 0 } }).success).toBe(false);
    expect(
      groupConfigInputSchema.safeParse({ pauseOnFailures: { pauseMs: 500, maxPauseMs: 100 } }).success,
    ).toBe(false);
    expect(groupConfigInputSchema.safeParse({ pauseOnFailures: { ratio: 0.5 } }).success).toBe(false);
    // Absent: off, as for a data directory written before the rule existed.
    expect(resolveGroupConfig(groupConfigInputSchema.parse({}))).not.toHaveProperty('pauseOnFailures');
  });

  it('round-trips a resolved config through the full schema', () => {
    const config = resolveGroupConfig({ fifo: true });
    expect(groupConfigSchema.parse(config)).toEqual(config);
  });
});
