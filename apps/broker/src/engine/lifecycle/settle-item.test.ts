import { initialReadyState, pushTransition } from '@ricochet/core';
import { describe, expect, it } from 'vitest';
import { malformedReceiptHandle, rejectionError, unknownReceiptHandle } from './settle-item.js';

const context = { retryPolicy: { type: 'fixed', delayMs: 1 }, maxRetries: 1 } as const;
const inflight = (() => {
  const result = pushTransition(
    initialReadyState(),
    { type: 'delivered', atMs: 0, leaseDurationMs: 100 },
    context,
  );
  if (!result.ok) throw new Error(result.rejection.message);
  return result.state;
})();

function rejectionOf(result: { ok: boolean; rejection?: unknown }) {
  if (result.ok) throw new Error('accepted');
  return (result as { rejection: Parameters<typeof rejectionError>[0] }).rejection;
}

describe('settle items', () => {
  it('answers an unknown and a malformed handle with 410 INVALID_RECEIPT_HANDLE', () => {
    for (const error of [unknownReceiptHandle(), malformedReceiptHandle()]) {
      expect([error.code, error.errorName]).toEqual([410, 'INVALID_RECEIPT_HANDLE']);
    }
    expect(unknownReceiptHandle().message).not.toBe(malformedReceiptHandle().message);
  });

  it('answers a stale or expired lease with 410, naming core reason', () => {
    const stale = rejectionError(
      rejectionOf(pushTransition(inflight, { type: 'succeeded', atMs: 1, lease: 9 }, context)),
    );
    expect([stale.code, stale.errorName]).toEqual([410, 'INVALID_RECEIPT_HANDLE']);
    expect(stale.message).toBe('the receipt handle is no longer valid: lease 9 was replaced by lease 1');
    const expired = rejectionError(
      rejectionOf(pushTransition(inflight, { type: 'succeeded', atMs: 100, lease: 1 }, context)),
    );
    expect(expired.code).toBe(410);
    expect(expired.message).toMatch(/^the receipt handle is no longer valid: lease 1 expired at 100/);
  });

  it('answers an invalid event (a bad duration) with 400 BAD_REQUEST', () => {
    const event = { type: 'failed', atMs: 1, lease: 1, reason: 'x', retryAfterMs: -5 } as const;
    const error = rejectionError(rejectionOf(pushTransition(inflight, event, context)));
    expect([error.code, error.errorName]).toEqual([400, 'BAD_REQUEST']);
    expect(error.message).toMatch(/retryAfterMs/);
  });

  it('answers an event the state does not take (an illegal transition) with 410', () => {
    const error = rejectionError(
      rejectionOf(pushTransition(initialReadyState(), { type: 'succeeded', atMs: 1, lease: 0 }, context)),
    );
    expect(error.code).toBe(410);
  });
});
