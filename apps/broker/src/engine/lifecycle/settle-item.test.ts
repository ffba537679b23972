import { initialReadyState, pushTransition } from '@ricochet/core';
import { BrokerError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { encodeReceiptHandle } from './receipt-handle.js';
import {
  malformedReceiptHandle,
  rejectionError,
  type SettleFailure,
  settleSplit,
  unknownReceiptHandle,
} from './settle-item.js';

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

const clustering = (offset: number) => ({
  receiptHandle: encodeReceiptHandle({ kind: 'clustering', group: 'g', topic: 't', offset, lease: 1 }),
});
const broadcast = (offset: number) => ({
  receiptHandle: encodeReceiptHandle({
    kind: 'broadcast',
    group: 'b',
    topic: 't',
    offset,
    lease: 1,
    clientId: 'c1',
  }),
});
const error = (message: string) => BrokerError.of('INVALID_RECEIPT_HANDLE', message);

/** A settler that records the batches it is handed and fails the items `failing` names, by handle. */
function settler(failing: ReadonlySet<string>) {
  const calls: string[][] = [];
  const settle = (items: readonly { receiptHandle: string }[]): SettleFailure[] => {
    calls.push(items.map((item) => item.receiptHandle));
    return items.flatMap((item, index) =>
      failing.has(item.receiptHandle) ? [{ index, error: error(item.receiptHandle) }] : [],
    );
  };
  return { calls, settle };
}

describe('settleSplit', () => {
  it('hands a batch of one kind, as it is, to its settler only', () => {
    const items = [clustering(0), clustering(1)];
    const b = settler(new Set());
    const c = settler(new Set([items[1]?.receiptHandle ?? '']));
    const failures = settleSplit(items, b.settle, c.settle);
    expect(b.calls).toEqual([]);
    expect(c.calls).toEqual([items.map((item) => item.receiptHandle)]);
    expect(failures.map((f) => f.index)).toEqual([1]);
    const onlyBroadcast = [broadcast(0)];
    const b2 = settler(new Set());
    const c2 = settler(new Set());
    settleSplit(onlyBroadcast, b2.settle, c2.settle);
    expect([b2.calls.length, c2.calls.length]).toEqual([1, 0]);
  });

  it('splits a mixed batch in order and indexes each failure into the whole batch', () => {
    const items = [broadcast(0), clustering(1), clustering(2), broadcast(3), clustering(4)];
    const handle = (i: number) => items[i]?.receiptHandle ?? '';
    const b = settler(new Set([handle(3)]));
    const c = settler(new Set([handle(1), handle(4)]));
    const failures = settleSplit(items, b.settle, c.settle);
    expect(b.calls).toEqual([[handle(0), handle(3)]]);
    expect(c.calls).toEqual([[handle(1), handle(2), handle(4)]]);
    expect(failures.map((f) => [f.index, f.error.message])).toEqual([
      [1, handle(1)],
      [3, handle(3)],
      [4, handle(4)],
    ]);
  });

  it('sends a handle that is not a broadcast one (even a malformed one) to the clustering settler', () => {
    const b = settler(new Set());
    const c = settler(new Set());
    settleSplit([broadcast(0), { receiptHandle: 'garbage' }], b.settle, c.settle);
    expect(c.calls).toEqual([['garbage']]);
  });
});
