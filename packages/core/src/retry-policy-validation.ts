import type { RetryPolicy } from './retry-policy.js';

/** The longest single retry delay a policy may ask for: 24 h, the same horizon as delay messages. */
export const MAX_RETRY_DELAY_MS = 24 * 60 * 60 * 1_000;

/** The most steps a stepped policy may list. */
export const MAX_RETRY_POLICY_STEPS = 64;

/** One problem found in a retry policy: where it is (`path`) and what is wrong, in plain words. */
export interface PolicyIssue {
  readonly path: readonly (string | number)[];
  readonly message: string;
}

/** The outcome of {@link validateRetryPolicy}: the typed policy, or every issue found. */
export type RetryPolicyValidation =
  | { readonly ok: true; readonly policy: RetryPolicy }
  | { readonly ok: false; readonly issues: readonly PolicyIssue[] };

/**
 * Check that an untrusted value (JSON from the admin API, a decoded frame) is a usable
 * {@link RetryPolicy}, and say precisely what is wrong when it is not.
 *
 * @example
 * validateRetryPolicy({ type: 'fixed', delayMs: -1 });
 * // { ok: false, issues: [{ path: ['delayMs'], message: 'delayMs must be a whole number of milliseconds from 0 to 86400000, got -1' }] }
 */
export function validateRetryPolicy(value: unknown): RetryPolicyValidation {
  const issues: PolicyIssue[] = [];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      ok: false,
      issues: [{ path: [], message: `a retry policy must be an object, got ${describe(value)}` }],
    };
  }
  const policy = value as Record<string, unknown>;
  switch (policy.type) {
    case 'stepped': {
      const delays = policy.delaysMs;
      if (!Array.isArray(delays)) {
        issues.push({ path: ['delaysMs'], message: `delaysMs must be an array, got ${describe(delays)}` });
      } else if (delays.length === 0 || delays.length > MAX_RETRY_POLICY_STEPS) {
        issues.push({
          path: ['delaysMs'],
          message: `delaysMs must list 1 to ${MAX_RETRY_POLICY_STEPS} delays, got ${delays.length}`,
        });
      } else {
        for (const [index, delay] of delays.entries()) checkDelay(issues, ['delaysMs', index], delay, 0);
      }
      if (policy.jitter !== undefined) checkJitter(issues, policy.jitter);
      break;
    }
    case 'fixed':
      checkDelay(issues, ['delayMs'], policy.delayMs, 0);
      if (policy.jitter !== undefined) checkJitter(issues, policy.jitter);
      break;
    case 'exponential': {
      checkDelay(issues, ['initialMs'], policy.initialMs, 1);
      checkDelay(issues, ['maxMs'], policy.maxMs, 1);
      const { initialMs, maxMs, multiplier, jitter } = policy;
      if (
        typeof multiplier !== 'number' ||
        !Number.isFinite(multiplier) ||
        multiplier < 1 ||
        multiplier > 100
      ) {
        issues.push({
          path: ['multiplier'],
          message: `multiplier must be a number from 1 to 100, got ${describe(multiplier)}`,
        });
      }
      checkJitter(issues, jitter);
      if (typeof initialMs === 'number' && typeof maxMs === 'number' && maxMs < initialMs) {
        issues.push({
          path: ['maxMs'],
          message: `maxMs (${maxMs}) must not be below initialMs (${initialMs})`,
        });
      }
      break;
    }
    default:
      issues.push({
        path: ['type'],
        message: `type must be one of "stepped", "fixed", "exponential", got ${describe(policy.type)}`,
      });
  }
  if (issues.length > 0) return { ok: false, issues };
  return { ok: true, policy: copyPolicy(policy as unknown as RetryPolicy) };
}

/**
 * Keep only the fields of the policy's type, so stray keys never reach the store. A stepped or
 * fixed policy's jitter of 0 is dropped: absent means 0 (X3), so such a policy is stored as before.
 */
function copyPolicy(policy: RetryPolicy): RetryPolicy {
  const jitter = policy.jitter === undefined || policy.jitter === 0 ? {} : { jitter: policy.jitter };
  switch (policy.type) {
    case 'stepped':
      return { type: 'stepped', delaysMs: [...policy.delaysMs], ...jitter };
    case 'fixed':
      return { type: 'fixed', delayMs: policy.delayMs, ...jitter };
    case 'exponential': {
      const { initialMs, multiplier, maxMs, jitter } = policy;
      return { type: 'exponential', initialMs, multiplier, maxMs, jitter };
    }
  }
}

/** X3: a jitter is a fraction from 0 (inclusive) to 1 (exclusive); 1 could draw a delay of 0. */
function checkJitter(issues: PolicyIssue[], jitter: unknown): void {
  if (typeof jitter === 'number' && Number.isFinite(jitter) && jitter >= 0 && jitter < 1) return;
  issues.push({
    path: ['jitter'],
    message: `jitter must be a fraction from 0 (inclusive) to 1 (exclusive), got ${describe(jitter)}`,
  });
}

function checkDelay(issues: PolicyIssue[], path: (string | number)[], value: unknown, minMs: number): void {
  if (typeof value === 'number' && Number.isInteger(value) && value >= minMs && value <= MAX_RETRY_DELAY_MS)
    return;
  const name = path.map((part) => (typeof part === 'number' ? `[${part}]` : part)).join('');
  issues.push({
    path,
    message: `${name} must be a whole number of milliseconds from ${minMs} to ${MAX_RETRY_DELAY_MS}, got ${describe(value)}`,
  });
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'an object';
  return String(value);
}
