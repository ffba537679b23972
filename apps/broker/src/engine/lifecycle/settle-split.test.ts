import { BrokerError } from '@ricochet/protocol';
import { describe, expect, it } from 'vitest';
import { encodeBroadcastReceiptHandle, encodeReceiptHandle } from './receipt-handle.js';
import type { SettleFailure } from './settle-item.js';
import { settleSplit } from './settle-split.js';

const clustering = (offset: number) => ({
  receiptHandle: encodeReceiptHandle({ group: 'g', topic: 't', offset }, 1),
});
const broadcast = (offset: number) => ({
  receiptHandle: encodeBroadcastReceiptHandle({ group: 'b', topic: 't', offset, lease: 1, clientId: 'c1' }),
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
