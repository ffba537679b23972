import { BrokerError, type OutgoingMessage, type SendReceipt } from '@ricochet/protocol';
import { queueOf } from './queue-choice.js';
import { topicOffset } from './queue-offsets.js';
import type { RoutedQueue } from './routed-queue.js';

/**
 * A send over the queues of a split store (`PartitionRouter.send`): each message goes to its
 * queue (`queue-choice.ts`), the queues at once. A message for a topic in `refusals` (R4 checked
 * over the cluster first) is refused here, and `onRefused` counts it. A queue that cannot take its
 * messages fails those only. Receipts keep the batch's order; their offsets name their queue.
 */
export async function sendOverQueues(
  queues: readonly RoutedQueue[],
  messages: readonly OutgoingMessage[],
  refusals: ReadonlyMap<string, BrokerError> | undefined,
  onRefused: (refusal: BrokerError) => void,
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
      const answered = await (queues[queue] as RoutedQueue)
        .send(slot.messages)
        .catch((error: unknown) => refusedReceipts(slot.messages, error));
      answered.forEach((receipt, i) => {
        receipts[slot.indexes[i] as number] = receipt.ok
          ? { ...receipt, offset: topicOffset(receipt.offset, queue, count) }
          : receipt;
      });
    }),
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
