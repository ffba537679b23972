import { isBroadcastReceiptHandle } from './receipt-handle.js';
import type { SettleFailure } from './settle-item.js';

/**
 * Settle a batch whose handles may belong to broadcast instances (B1) and to clustering groups:
 * each part goes to its own settler, and the failures come back indexed into the whole batch.
 */
export function settleSplit<TItem extends { readonly receiptHandle: string }>(
  items: readonly TItem[],
  settleBroadcast: (items: readonly TItem[]) => SettleFailure[],
  settleClustering: (items: readonly TItem[]) => SettleFailure[],
): SettleFailure[] {
  const broadcast: number[] = [];
  const clustering: number[] = [];
  for (const [index, item] of items.entries()) {
    (isBroadcastReceiptHandle(item.receiptHandle) ? broadcast : clustering).push(index);
  }
  // The common case, a batch of one kind, needs no re-indexing.
  if (broadcast.length === 0) return settleClustering(items);
  if (clustering.length === 0) return settleBroadcast(items);
  const pick = (indices: readonly number[]) => indices.map((index) => items[index] as TItem);
  const reindex = (indices: readonly number[]) => (failure: SettleFailure) => ({
    index: indices[failure.index] ?? failure.index,
    error: failure.error,
  });
  const failures = settleBroadcast(pick(broadcast)).map(reindex(broadcast));
  failures.push(...settleClustering(pick(clustering)).map(reindex(clustering)));
  return failures.sort((a, b) => a.index - b.index);
}
