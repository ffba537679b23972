import {
  BrokerError,
  type DeliveredMessage,
  ERROR_CODES,
  type OutgoingMessage,
  type SendReceipt,
  splitDeliveries,
} from '@ricochet/protocol';
import {
  type BrokerEngine,
  type DeadLetterPage,
  malformedReceiptHandle,
  type ReceiveBudget,
  type RedrivePacer,
  type ServiceReceiveRequest,
  type SettleFailure,
  type SettleItem,
} from '../../engine/index.js';
import type { StoredMessage } from '../../store/records.js';
import { deliveryOfQueue } from './merged-views.js';
import { queueOf, routeHandle, topicOffset } from './queue-addressing.js';
import { type OnEachRoute, SEND_REROUTES } from './reroute-waits.js';
import type { RoutedQueue } from './routed-queue.js';

/**
 * One request of a client over the queues of a split store, answered as one: a send, a settle
 * batch, a simple receive and a redrive each go to the queues they concern, the queues at once,
 * and their answers are put back together in the request's order (`PartitionRouter` calls them).
 * Each fans out in its own way: a send by each message's queue, a settle by the queue each handle
 * names, a receive by the queues in turn and then all waiting, a redrive by one pacer over all.
 */

type ErrorReporter = (error: unknown, context: string) => void;

/** Whether a refusal says the queue is between owners, or its owner could not be reached: `503`. */
function betweenOwners(receipt: SendReceipt): boolean {
  return !receipt.ok && receipt.error.code === ERROR_CODES.BROKER_UNAVAILABLE.code;
}

// ---- send

/**
 * A send over the queues of a split store (`PartitionRouter.send`): each message goes to its
 * queue (`queue-addressing.ts`), the queues at once. A message for a topic in `refusals` (R4 checked
 * over the cluster first) is refused here, and `onRefused` counts it. A queue that cannot take its
 * messages fails those only. Receipts keep the batch's order; their offsets name their queue.
 *
 * A message its queue refuses with `503` (between owners, or its owner gone) is sent again on the
 * queue's next route, with `onEachRoute` (`reroute-waits.ts`, within `SEND_REROUTES`), instead of going back to
 * the client at once: the producer would only send it again. Its id is unchanged, so a copy the
 * old owner stored after all is answered with its receipt (R3).
 */
export async function sendOverQueues(
  queues: readonly RoutedQueue[],
  messages: readonly OutgoingMessage[],
  refusals: ReadonlyMap<string, BrokerError> | undefined,
  onRefused: (refusal: BrokerError) => void,
  onEachRoute: OnEachRoute,
): Promise<SendReceipt[]> {
  const count = queues.length;
  const receipts = new Array<SendReceipt>(messages.length);
  const byQueue = queues.map(() => ({ indexes: [] as number[], messages: [] as OutgoingMessage[] }));
  messages.forEach((message, index) => {
    const refusal = refusals?.get(message.topic);
    if (refusal) {
      receipts[index] = refusedReceipts([message], refusal)[0] as SendReceipt;
      onRefused(refusal);
      return;
    }
    const slot = byQueue[queueOf(message, count)] as (typeof byQueue)[number];
    slot.indexes.push(index);
    slot.messages.push(message);
  });
  await Promise.all(
    byQueue.map(async (slot, queue) => {
      if (slot.messages.length === 0) return;
      const answered = await sendToQueue(queue, slot.messages, onEachRoute);
      answered.forEach((receipt, i) => {
        receipts[slot.indexes[i] as number] = receipt.ok
          ? { ...receipt, offset: topicOffset(receipt.offset, queue, count) }
          : receipt;
      });
    }),
  );
  return receipts;
}

/** Send `messages` to queue `queue`, again on its next route for those refused `503` (bounded). */
async function sendToQueue(
  queue: number,
  messages: readonly OutgoingMessage[],
  onEachRoute: OnEachRoute,
): Promise<SendReceipt[]> {
  const receipts = new Array<SendReceipt>(messages.length);
  let waiting = messages.map((_, index) => index);
  await onEachRoute(
    queue,
    async (routed) => {
      const again = waiting.map((index) => messages[index] as OutgoingMessage);
      const answered = await routed.send(again).catch((error: unknown) => refusedReceipts(again, error));
      waiting.forEach((index, i) => {
        receipts[index] = answered[i] as SendReceipt;
      });
      waiting = waiting.filter((index) => betweenOwners(receipts[index] as SendReceipt));
      return waiting.length > 0;
    },
    SEND_REROUTES,
  );
  return receipts;
}

/**
 * A queue that cannot take a send (between owners, its owner unreachable) fails its messages only:
 * each gets a receipt with the error, which producers retry, and the other queues' are stored.
 */
function refusedReceipts(messages: readonly OutgoingMessage[], error: unknown): SendReceipt[] {
  if (!(error instanceof BrokerError)) throw error;
  const payload = {
    code: error.code,
    message: error.message,
    ...(error.details === undefined ? {} : { details: { ...error.details } }),
  };
  return messages.map((message) => ({ ok: false, messageId: message.messageId, error: payload }));
}

// ---- settle

/**
 * A settle batch over the queues of a split store (`PartitionRouter`'s ack, nack and release):
 * each handle is settled in the queue it names (`queue-addressing.ts`), the queues at once; a handle
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
    const routed = routeHandle(item.receiptHandle, queues.length);
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

// ---- receive (simple consumers)

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
 *
 * With `scope: 'owned'` (`receive.scope`), only the queues this broker owns are leased from, so
 * that a client that asks each owner is never forwarded for; owning none, it answers at once.
 */
export async function receiveOverQueues(
  queues: readonly RoutedQueue[],
  queueOrder: readonly number[],
  request: ServiceReceiveRequest,
  onError: ErrorReporter,
): Promise<DeliveredMessage[]> {
  const order =
    request.scope === 'owned'
      ? queueOrder.filter((queue) => queues[queue]?.engine !== undefined)
      : queueOrder;
  if (order.length === 0) return [];
  const maxBytes = request.maxBytes ?? Number.POSITIVE_INFINITY;
  const budget: ReceiveBudget = { remaining: request.maxMessages, remainingBytes: maxBytes };
  const leased: DeliveredMessage[] = [];
  for (const queue of order) {
    if (budget.remaining <= 0 || budget.remainingBytes <= 0) break;
    const found = await (queues[queue] as RoutedQueue).receive({ ...request, awaitDurationMs: 0, budget });
    for (const message of found) leased.push(deliveryOfQueue(message, queue, queues.length));
  }
  if (leased.length > 0 || request.awaitDurationMs === 0 || request.signal?.aborted)
    return withinAsked(queues, leased, request.maxMessages, maxBytes, onError);
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
    return withinAsked(queues, perQueue.flat(), request.maxMessages, maxBytes, onError);
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

/**
 * At most `maxMessages` of what the queues leased, within `maxBytes` but for one message alone;
 * the surplus (a remote queue's, see above, or two queues' leasing in the same turn) is handed back.
 */
function withinAsked(
  queues: readonly RoutedQueue[],
  leased: DeliveredMessage[],
  maxMessages: number,
  maxBytes: number,
  onError: ErrorReporter,
): DeliveredMessage[] {
  const kept = splitDeliveries(leased, maxMessages, maxBytes)[0] ?? [];
  if (kept.length === leased.length) return leased;
  for (const surplus of leased.slice(kept.length)) {
    const routed = routeHandle(surplus.receiptHandle, queues.length);
    if (routed) void handBack(queues, [{ ...surplus, receiptHandle: routed.handle }], routed.queue, onError);
  }
  return kept;
}

/**
 * Simple leases nobody received: released, so they are Ready again at once and the attempt does
 * not count (docs/protocol/state-machines.md, `released`). It happens whenever a remote queue
 * leases for a waiting receive that another queue answered, which a delivery rate limit (X5)
 * makes routine: counted as attempts, those leases took messages to the DLQ that no consumer had
 * seen. An owner of an earlier release refuses to release a simple lease (400): its leases are
 * made visible at once instead, which counts the attempt, as before.
 */
async function handBack(
  queues: readonly RoutedQueue[],
  messages: readonly DeliveredMessage[],
  queue: number,
  onError: ErrorReporter,
): Promise<void> {
  const routed = queues[queue] as RoutedQueue;
  const fail = (error: unknown) => onError(error, `could not hand back a lease of queue ${queue}`);
  const handles = messages.map((message) => message.receiptHandle);
  let refused: readonly SettleFailure[];
  try {
    refused = await routed.release(handles);
  } catch (error) {
    fail(error);
    return;
  }
  await Promise.all(
    refused
      .filter(({ error }) => error.code === ERROR_CODES.BAD_REQUEST.code)
      .map(({ index }) => routed.changeInvisibleDuration(handles[index] as string, 0).catch(fail)),
  );
}

// ---- redrive (D2)

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
        .admin('redrive', group, {
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
    const listed: DeadLetterPage = await queue.admin('listDeadLetters', group, cursor, REMOTE_PAGE);
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
