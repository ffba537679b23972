import type { OutgoingMessage } from '@ricochet/protocol';

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
