import { malformedReceiptHandle, type SettleFailure, type SettleItem } from '../../engine/index.js';
import { untagHandle } from './queue-handles.js';
import type { RoutedQueue } from './routed-queue.js';

/**
 * A settle batch over the queues of a split store (`PartitionRouter`'s ack, nack and release):
 * each handle is settled in the queue it names (`queue-handles.ts`), the queues at once; a handle
 * that names no queue is refused like any handle the broker did not issue. Failures keep the
 * batch's indexes.
 */
export async function settleOverQueues<TItem extends SettleItem>(
  queues: readonly RoutedQueue[],
  items: readonly TItem[],
  settleIn: (queue: RoutedQueue, items: TItem[]) => Promise<SettleFailure[]>,
): Promise<SettleFailure[]> {
  const failures: SettleFailure[] = [];
  const byQueue = queues.map(() => ({ indexes: [] as number[], items: [] as TItem[] }));
  items.forEach((item, index) => {
    const routed = untagHandle(item.receiptHandle, queues.length);
    if (routed === undefined) {
      failures.push({ index, error: malformedReceiptHandle() });
      return;
    }
    const slot = byQueue[routed.queue] as (typeof byQueue)[number];
    slot.indexes.push(index);
    slot.items.push({ ...item, receiptHandle: routed.handle });
  });
  await Promise.all(
    byQueue.map(async (slot, queue) => {
      if (slot.items.length === 0) return;
      for (const { index, error } of await settleIn(queues[queue] as RoutedQueue, slot.items)) {
        failures.push({ index: slot.indexes[index] as number, error });
      }
    }),
  );
  return failures.sort((a, b) => a.index - b.index);
}
