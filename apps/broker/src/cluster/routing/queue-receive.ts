import type { DeliveredMessage } from '@ricochet/protocol';
import type { ReceiveBudget, ReceiveRequest } from '../../engine/index.js';
import { deliveryOfQueue } from './merged-views.js';
import { untagHandle } from './queue-handles.js';
import type { RoutedQueue } from './routed-queue.js';

type ErrorReporter = (error: unknown, context: string) => void;

/**
 * A simple consumer's receive over the queues of a split store (`PartitionRouter.receive`): lease
 * from the queues in `order`, each what the others left of `maxMessages`; when none has anything
 * and the receive may wait, wait on every queue at once, with one budget, and answer with what the
 * first to find messages leased (and any other that leased in the same turn). Deliveries come
 * tagged with their queue.
 *
 * A queue this broker owns spends the budget lease by lease, so the local queues never lease more
 * than asked together. A remote one spends it when its answer comes, and cannot be told to stop
 * waiting: what it leases past what was asked, or after another queue answered, is handed back.
 */
export async function receiveOverQueues(
  queues: readonly RoutedQueue[],
  order: readonly number[],
  request: ReceiveRequest,
  onError: ErrorReporter,
): Promise<DeliveredMessage[]> {
  const budget: ReceiveBudget = { remaining: request.maxMessages };
  const leased: DeliveredMessage[] = [];
  for (const queue of order) {
    if (budget.remaining <= 0) break;
    const found = await (queues[queue] as RoutedQueue).receive({ ...request, awaitDurationMs: 0, budget });
    for (const message of found) leased.push(deliveryOfQueue(message, queue, queues.length));
  }
  if (leased.length > 0 || request.awaitDurationMs === 0 || request.signal?.aborted)
    return withinAsked(queues, leased, request.maxMessages, onError);
  const stopWaiting = new AbortController();
  const onAbort = () => stopWaiting.abort();
  request.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const perQueue = await Promise.all(
      order.map(async (queue) => {
        const routed = queues[queue] as RoutedQueue;
        const waiting = routed.receive({ ...request, budget, signal: stopWaiting.signal });
        const found =
          routed.engine === undefined
            ? await untilStopped(waiting, stopWaiting.signal, (late) =>
                handBack(queues, late, queue, onError),
              )
            : await waiting;
        // The first queue with messages answers the receive: the others stop waiting.
        if (found.length > 0) stopWaiting.abort();
        return found.map((message) => deliveryOfQueue(message, queue, queues.length));
      }),
    );
    return withinAsked(queues, perQueue.flat(), request.maxMessages, onError);
  } finally {
    stopWaiting.abort();
    request.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * A remote queue's waiting receive, until the receive is answered: the owner cannot be told to
 * stop waiting, so what it leases after that goes to `handBackLate`.
 */
function untilStopped(
  waiting: Promise<DeliveredMessage[]>,
  stopped: AbortSignal,
  handBackLate: (late: readonly DeliveredMessage[]) => Promise<void>,
): Promise<DeliveredMessage[]> {
  const whenLate = () => void waiting.then(handBackLate).catch(() => {});
  if (stopped.aborted) {
    whenLate();
    return Promise.resolve([]);
  }
  return new Promise((resolve, reject) => {
    const onStop = () => {
      resolve([]);
      whenLate();
    };
    stopped.addEventListener('abort', onStop, { once: true });
    waiting.then(
      (found) => {
        stopped.removeEventListener('abort', onStop);
        resolve(found);
      },
      (error: unknown) => {
        stopped.removeEventListener('abort', onStop);
        reject(error);
      },
    );
  });
}

/** At most `maxMessages` of what the queues leased; the surplus (a remote queue's, see above) is handed back. */
function withinAsked(
  queues: readonly RoutedQueue[],
  leased: DeliveredMessage[],
  maxMessages: number,
  onError: ErrorReporter,
): DeliveredMessage[] {
  if (leased.length <= maxMessages) return leased;
  for (const surplus of leased.slice(maxMessages)) {
    const routed = untagHandle(surplus.receiptHandle, queues.length);
    if (routed) void handBack(queues, [{ ...surplus, receiptHandle: routed.handle }], routed.queue, onError);
  }
  return leased.slice(0, maxMessages);
}

/**
 * Simple leases nobody will process: visible again now (a simple lease cannot be released). The
 * lease counts as an attempt, as an expired one does; it happens only when two queues lease for
 * one waiting receive in the same moment.
 */
async function handBack(
  queues: readonly RoutedQueue[],
  messages: readonly DeliveredMessage[],
  queue: number,
  onError: ErrorReporter,
): Promise<void> {
  const routed = queues[queue] as RoutedQueue;
  await Promise.all(
    messages.map((message) =>
      routed
        .changeInvisibleDuration(message.receiptHandle, 0)
        .catch((error: unknown) => onError(error, `could not hand back a lease of queue ${queue}`)),
    ),
  );
}
