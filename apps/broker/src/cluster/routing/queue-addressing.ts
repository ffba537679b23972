import { type OutgoingMessage, queueOfMessage } from '@ricochet/protocol';
import { decodeReceiptHandle, encodeReceiptHandle } from '../../engine/index.js';

/**
 * Which queue of a store split into queues a value belongs to: the queue a message is stored in,
 * the queue a receipt handle or an offset names, and the order queues are served in. Every value a
 * client holds of a split store names its queue, so that any broker can route it back.
 */

// ---- the queue of a message

/**
 * The queue a message is stored in, when a store is split into `queues`: the protocol's placement
 * rule (`@ricochet/protocol`'s `queueOfMessage`), which clients that route to queue owners compute
 * too. A hash of its message group keeps a FIFO group in one queue (P5); of its id, a resend
 * reaches the queue that may hold its first copy (R3).
 */
export function queueOf(
  message: Pick<OutgoingMessage, 'messageId' | 'messageGroup'>,
  queues: number,
): number {
  return queueOfMessage(message, queues);
}

/** Every queue once, starting one further at each call, so that no queue is always served first. */
export class QueueRotation {
  readonly #queues: number;
  #first = 0;

  constructor(queues: number) {
    this.#queues = queues;
  }

  next(): number[] {
    const first = this.#first;
    this.#first = (first + 1) % this.#queues;
    return Array.from({ length: this.#queues }, (_, i) => (first + i) % this.#queues);
  }
}

// ---- the queue of a receipt handle

/**
 * Receipt handles of a store split into queues name their queue, so that a settle goes to the
 * engine that issued it (the codec, `engine/lifecycle/receipt-handle.ts`, writes it; deliveries are
 * marked with `withQueue`). The queue a client's handle names, and the handle as that queue's
 * engine issued it, or `undefined` when it is no handle of a queue of `queues`.
 */
export function routeHandle(
  text: string,
  queues: number,
): { readonly queue: number; readonly handle: string } | undefined {
  const handle = decodeReceiptHandle(text);
  if (handle?.queue === undefined || handle.queue >= queues) return undefined;
  return { queue: handle.queue, handle: encodeReceiptHandle({ ...handle, queue: undefined }) };
}

// ---- the queue of an offset

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
