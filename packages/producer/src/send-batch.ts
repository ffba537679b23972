/** The most message bytes (estimated) one `send` frame carries: 1 MiB. */
export const MAX_BATCH_BYTES = 1024 * 1024;

/** Room kept in a frame for its own fields (`type`, `id`, the array header). */
const FRAME_OVERHEAD_BYTES = 1024;

/**
 * The byte budget of one batch: {@link MAX_BATCH_BYTES}, or less when the broker reads smaller
 * WebSocket messages (a larger one would close the connection with 1009).
 */
export function batchByteLimit(maxFrameBytes: number | undefined): number {
  if (maxFrameBytes === undefined) return MAX_BATCH_BYTES;
  return Math.max(1, Math.min(MAX_BATCH_BYTES, maxFrameBytes - FRAME_OVERHEAD_BYTES));
}

/**
 * Remove the next batch from the head of `queue` and return it, in queue order: as many items as
 * fit in `maxMessages` and `maxBytes`, and always at least one, so a message larger than the
 * budget (but within the broker's body limit) travels alone instead of never.
 */
export function takeBatch<TItem extends { readonly encodedBytesEstimate: number }>(
  queue: TItem[],
  maxMessages: number,
  maxBytes: number,
): TItem[] {
  let count = 0;
  let bytes = 0;
  for (const item of queue) {
    if (count > 0 && (count >= maxMessages || bytes + item.encodedBytesEstimate > maxBytes)) break;
    count += 1;
    bytes += item.encodedBytesEstimate;
  }
  return queue.splice(0, count);
}
