import type { BrokerEngine, RedrivePacer } from '../../engine/index.js';
import type { StoredMessage } from '../../store/records.js';
import type { RoutedQueue } from './routed-queue.js';

type ErrorReporter = (error: unknown, context: string) => void;

/** How many DLQ entries one page of a remote queue's listing brings. */
const REMOTE_PAGE = 512;
/** A bound on the pages read from one remote queue (`REMOTE_PAGE` × this entries). */
const MAX_REMOTE_PAGES = 10_000;

/** A DLQ entry a redrive will take, with where it was found. */
interface QueuedRedrive {
  readonly queue: number;
  /** The engine that listed it, when this broker owned the queue then. */
  readonly engine: BrokerEngine | undefined;
  readonly message: StoredMessage;
}

/**
 * D2 over the queues of a split store (`PartitionRouter.redrive`): every queue's redrivable DLQ
 * entries, merged in the order they were dead-lettered and paced by one pacer at `ratePerSecond`
 * in all, whichever broker owns each queue. A slice's entries in a queue this broker owns are made
 * Ready at once; those in a queue another broker owns are redriven there by id, all at once.
 *
 * One pacer for the cluster, not one per owner at its share: owners pacing separately would each
 * send their first slice at once, and the rate would hold only on average.
 *
 * A remote queue's entries are those its DLQ listing shows not yet redriven: one whose origin
 * message retention deleted counts as accepted but is skipped by its owner when its turn comes,
 * as a local one that expires while it waits is.
 */
export async function redriveOverQueues(
  queues: readonly RoutedQueue[],
  pacer: RedrivePacer,
  group: string,
  options: { readonly messageIds?: readonly string[]; readonly ratePerSecond: number },
  onError: ErrorReporter,
): Promise<{ accepted: number }> {
  const perQueue = await Promise.all(queues.map((queue) => redrivableIn(queue, group, options.messageIds)));
  const queued = perQueue.flat().sort(inDeadLetterOrder);
  pacer.pace(queued, options.ratePerSecond, (slice) => {
    for (const queue of queues) {
      const ofQueue = slice.filter((item) => item.queue === queue.queue);
      if (ofQueue.length === 0) continue;
      // Listed by this queue's engine now: made Ready at once. Listed by another owner, or the
      // queue changed hands since: its owner finds them by id.
      const listedHere: StoredMessage[] = [];
      const elsewhere: string[] = [];
      for (const { engine, message } of ofQueue) {
        if (engine !== undefined && engine === queue.engine) listedHere.push(message);
        else elsewhere.push(message.messageId);
      }
      if (listedHere.length > 0) queue.engine?.redriveNow(group, listedHere);
      if (elsewhere.length === 0) continue;
      queue
        .redrive(group, {
          messageIds: elsewhere,
          ratePerSecond: options.ratePerSecond,
        })
        .catch((error: unknown) => onError(error, `redriving group ${group} in queue ${queue.queue}`));
    }
  });
  return { accepted: queued.length };
}

async function redrivableIn(
  queue: RoutedQueue,
  group: string,
  messageIds: readonly string[] | undefined,
): Promise<QueuedRedrive[]> {
  const { engine } = queue;
  if (engine !== undefined) {
    return engine.redrivable(group, messageIds).map((message) => ({ queue: queue.queue, engine, message }));
  }
  const wanted = messageIds === undefined ? undefined : new Set(messageIds);
  const found: QueuedRedrive[] = [];
  let cursor: number | null = 0;
  for (let page = 0; cursor !== null && page < MAX_REMOTE_PAGES; page++) {
    const listed = await queue.listDeadLetters(group, cursor, REMOTE_PAGE);
    for (const message of listed.messages) {
      if (!wanted || wanted.has(message.messageId))
        found.push({ queue: queue.queue, engine: undefined, message });
    }
    cursor = listed.cursor;
  }
  return found;
}

function inDeadLetterOrder(a: QueuedRedrive, b: QueuedRedrive): number {
  return (
    (a.message.deadLetter?.deadLetteredAt ?? 0) - (b.message.deadLetter?.deadLetteredAt ?? 0) ||
    a.message.offset - b.message.offset
  );
}
