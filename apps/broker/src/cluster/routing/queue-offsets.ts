/**
 * Offsets of a store split into queues. Each queue numbers its messages of a topic 0, 1, 2, …;
 * clients see them interleaved, `offset × queues + queue`, so that an offset names one message of
 * the topic whichever queue holds it, and says which queue that is. With one queue, an offset is
 * the queue's own.
 */
export function topicOffset(queueOffset: number, queue: number, queues: number): number {
  return queueOffset * queues + queue;
}

/** The first offset of `queue` at or after the topic offset `from`. */
export function queueOffsetFrom(from: number, queue: number, queues: number): number {
  return Math.max(0, Math.ceil((from - queue) / queues));
}
