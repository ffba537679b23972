import type { OutgoingMessage } from '@ricochet/protocol';

/**
 * Which queue of a store split into queues a value belongs to: the queue a message is stored in,
 * the queue a receipt handle or an offset names, and the order queues are served in. Every value a
 * client holds of a split store names its queue, so that any broker can route it back.
 */

// ---- the queue of a message

/**
 * The queue a message is stored in, when a store is split into `queues`: a hash of its message
 * group when it has one, so that every message of a FIFO group is in one queue, in order (P5);
 * else of its id, so that a send retried with the same id reaches the queue that may hold it, and
 * is answered with the original receipt (R3).
 *
 * The hash is part of the stored layout: every broker of a cluster, and every release, must pick
 * the same queue for the same key, or a message group would be split across queues.
 */
export function queueOf(
  message: Pick<OutgoingMessage, 'messageId' | 'messageGroup'>,
  queues: number,
): number {
  if (queues === 1) return 0;
  return fnv1a(message.messageGroup ?? message.messageId) % queues;
}

/** 32-bit FNV-1a over the string's UTF-16 code units: cheap, stable, and well spread for short keys. */
function fnv1a(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
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
 * engine that issued it: `<the engine's handle>@<queue>`. The mark goes at the end because the
 * permission check (`groupAndTopicOfHandle`) reads the group and topic from the start of a handle,
 * and `@` appears in no name, offset or lease number.
 */
const QUEUE_MARK = '@';

/** An engine's handle as clients of a partitioned store hold it. */
export function tagHandle(handle: string, queue: number): string {
  return `${handle}${QUEUE_MARK}${queue}`;
}

/** The queue a handle names and the engine's own handle, or `undefined` when it names no queue of `queues`. */
export function untagHandle(
  text: string,
  queues: number,
): { readonly queue: number; readonly handle: string } | undefined {
  const mark = text.lastIndexOf(QUEUE_MARK);
  if (mark < 1 || mark === text.length - 1 || text.length - mark > 3) return undefined;
  let queue = 0;
  for (let i = mark + 1; i < text.length; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    queue = queue * 10 + digit;
  }
  // One spelling per queue: no leading zero.
  if (text.length - mark > 2 && text.charCodeAt(mark + 1) === 0x30) return undefined;
  if (queue >= queues) return undefined;
  return { queue, handle: text.slice(0, mark) };
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
