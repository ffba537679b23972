import { queueOf } from './queue-addressing.js';

/** The first `count` message ids `${prefix}-0`, `${prefix}-1`, … that a store of `queues` queues places in `queue`. */
export function idsInQueue(queue: number, count: number, queues: number, prefix = 'm'): string[] {
  const found: string[] = [];
  for (let i = 0; found.length < count && i < 10_000; i++) {
    const id = `${prefix}-${i}`;
    if (queueOf({ messageId: id }, queues) === queue) found.push(id);
  }
  return found;
}
