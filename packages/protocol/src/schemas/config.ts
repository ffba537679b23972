import { resolvePauseOnFailures, validatePauseOnFailures, validateRetryPolicy } from '@ricochet/core';
import { z } from 'zod';

/** The largest `maxRetries` a group may have. */
export const MAX_MAX_RETRIES = 1_000;

/** The longest consumption timeout a group may have: 24 h. */
export const MAX_CONSUMPTION_TIMEOUT_MS = 24 * 60 * 60 * 1_000;

/** The longest a broadcasting group may remember an instance it no longer sees: 365 days. */
export const MAX_BROADCAST_INSTANCE_TTL_MS = 365 * 24 * 60 * 60 * 1_000;

/** The longest retention a topic or DLQ may have: 10 years. */
export const MAX_RETENTION_MS = 10 * 365 * 24 * 60 * 60 * 1_000;

/**
 * A retry policy (DESIGN.md §2). zod checks the shape; `@ricochet/core`'s validator checks the
 * values, so the bounds and their messages exist once. Its type equals core's `RetryPolicy`.
 */
export const retryPolicySchema = z
  .discriminatedUnion('type', [
    z
      .object({
        type: z.literal('stepped'),
        delaysMs: z.array(z.number()).readonly(),
        jitter: z.number().exactOptional(),
      })
      .readonly(),
    z
      .object({ type: z.literal('fixed'), delayMs: z.number(), jitter: z.number().exactOptional() })
      .readonly(),
    z
      .object({
        type: z.literal('exponential'),
        initialMs: z.number(),
        multiplier: z.number(),
        maxMs: z.number(),
        jitter: z.number(),
      })
      .readonly(),
  ])
  .superRefine((policy, ctx) => {
    const result = validateRetryPolicy(policy);
    if (result.ok) return;
    for (const issue of result.issues)
      ctx.addIssue({ code: 'custom', path: [...issue.path], message: issue.message });
  });

const pauseOnFailuresFields = {
  failureRatio: z.number().gt(0).max(1),
  minOutcomes: z.number().int().min(1).max(1_000_000),
  windowMs: z.number().int().min(10).max(MAX_CONSUMPTION_TIMEOUT_MS),
  pauseMs: z.number().int().min(1).max(MAX_CONSUMPTION_TIMEOUT_MS),
  maxPauseMs: z.number().int().min(1).max(MAX_CONSUMPTION_TIMEOUT_MS),
};

function checkPauseOnFailures(
  config: z.infer<z.ZodObject<typeof pauseOnFailuresFields>>,
  ctx: z.core.$RefinementCtx<unknown>,
): void {
  for (const message of validatePauseOnFailures(config)) ctx.addIssue({ code: 'custom', message });
}

/** The failure-storm rule of a group (DESIGN.md §11), as the broker reports it. */
export const pauseOnFailuresSchema = z
  .object(pauseOnFailuresFields)
  .readonly()
  .superRefine(checkPauseOnFailures);

/**
 * The failure-storm rule as a user writes it: omitted fields take core's defaults, so
 * `pauseOnFailures: {}` turns the rule on with them.
 */
export const pauseOnFailuresInputSchema = z
  .object({
    failureRatio: pauseOnFailuresFields.failureRatio.exactOptional(),
    minOutcomes: pauseOnFailuresFields.minOutcomes.exactOptional(),
    windowMs: pauseOnFailuresFields.windowMs.exactOptional(),
    pauseMs: pauseOnFailuresFields.pauseMs.exactOptional(),
    maxPauseMs: pauseOnFailuresFields.maxPauseMs.exactOptional(),
  })
  .strict()
  .transform((input) => resolvePauseOnFailures(input))
  .superRefine(checkPauseOnFailures);

/** The highest `maxDeliveriesPerSecond` a group takes: far above what one broker delivers. */
export const MAX_DELIVERIES_PER_SECOND = 1_000_000;

const groupConfigShape = {
  maxRetries: z.number().int().min(0).max(MAX_MAX_RETRIES),
  retryPolicy: retryPolicySchema,
  /** X2's retry budget; absent: none. */
  maxRetryDurationMs: z.number().int().min(1).max(MAX_BROADCAST_INSTANCE_TTL_MS).exactOptional(),
  /** X4's bound on postponing without a budget; absent: 1 h. */
  maxPostponeMs: z.number().int().min(1).max(MAX_BROADCAST_INSTANCE_TTL_MS).exactOptional(),
  fifo: z.boolean(),
  consumeMode: z.enum(['clustering', 'broadcasting']),
  consumptionTimeoutMs: z.number().int().min(1).max(MAX_CONSUMPTION_TIMEOUT_MS),
  startFrom: z.enum(['latest', 'earliest']),
  broadcastInstanceTtlMs: z.number().int().min(1).max(MAX_BROADCAST_INSTANCE_TTL_MS),
  dlqRetentionMs: z.number().int().min(1).max(MAX_RETENTION_MS),
  pauseOnFailures: pauseOnFailuresSchema.exactOptional(),
  history: z.enum(['failures', 'full']).exactOptional(),
  /** X5: deliveries per second to the group, at most; absent, no limit. */
  maxDeliveriesPerSecond: z.number().int().min(1).max(MAX_DELIVERIES_PER_SECOND).exactOptional(),
};

/** A complete group config, as the broker reports it. */
export const groupConfigSchema = z.object(groupConfigShape).readonly();

/** A group config as a user writes it (admin PUT): omitted fields keep their defaults. */
export const groupConfigInputSchema = z
  .object({
    maxRetries: groupConfigShape.maxRetries.exactOptional(),
    retryPolicy: groupConfigShape.retryPolicy.exactOptional(),
    maxRetryDurationMs: groupConfigShape.maxRetryDurationMs,
    maxPostponeMs: groupConfigShape.maxPostponeMs,
    fifo: groupConfigShape.fifo.exactOptional(),
    consumeMode: groupConfigShape.consumeMode.exactOptional(),
    consumptionTimeoutMs: groupConfigShape.consumptionTimeoutMs.exactOptional(),
    startFrom: groupConfigShape.startFrom.exactOptional(),
    broadcastInstanceTtlMs: groupConfigShape.broadcastInstanceTtlMs.exactOptional(),
    dlqRetentionMs: groupConfigShape.dlqRetentionMs.exactOptional(),
    pauseOnFailures: pauseOnFailuresInputSchema.exactOptional(),
    history: groupConfigShape.history,
    maxDeliveriesPerSecond: groupConfigShape.maxDeliveriesPerSecond,
  })
  .strict()
  .readonly();

/** The fields of a topic config: strict in a PUT ({@link topicConfigSchema}), open in an answer. */
export const topicConfigShape = {
  type: z.enum(['normal', 'fifo', 'delay']),
  maxBacklogMessages: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).exactOptional(),
  /** Absent: 72 h (DESIGN.md §5); the broker reports the value it uses. */
  retentionMs: z.number().int().min(1).max(MAX_RETENTION_MS).exactOptional(),
  retentionBytes: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER).exactOptional(),
};

/** A topic config (admin PUT). */
export const topicConfigSchema = z.object(topicConfigShape).strict().readonly();
