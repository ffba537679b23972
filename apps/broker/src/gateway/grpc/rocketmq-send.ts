import type { BrokerError, OutgoingMessage, SendReceipt } from '@ricochet/protocol';
import type { RequestFrame } from '../session-access.js';
import { permitted, type RocketCall, type RocketDeps } from './rocketmq-call.js';
import { outgoingOf } from './rocketmq-messages.js';
import type { SendMessageRequest, SendResultEntry } from './rocketmq-schema.js';
import { OK_STATUS, overallStatus, status, statusOfPayload } from './rocketmq-status.js';

/**
 * `SendMessage`: each message converted and checked as Ricochet's own `send` frame is (a message
 * that cannot be read, or may not be published, gets its own failed entry and is never stored),
 * the rest stored by `send` (the broker's service's, merged with the turn's other calls), so R1
 * (durable before the answer), R3 (dedup by the client's message id) and R4 (TOO_MANY_REQUESTS)
 * hold as they do for every client.
 */
export async function sendMessages(
  deps: RocketDeps,
  request: SendMessageRequest,
  call: RocketCall,
  send: (messages: readonly OutgoingMessage[]) => Promise<SendReceipt[]>,
) {
  const messages = request.messages ?? [];
  if (messages.length === 0) return { status: status('BAD_REQUEST', 'no messages to send'), entries: [] };
  const nowMs = deps.clock.now();
  const converted = messages.map((message) => outgoingOf(message, nowMs, deps.maxBodyBytes));
  const readable: OutgoingMessage[] = [];
  for (const entry of converted) if (entry.ok) readable.push(entry.message);
  // The request pipeline's access and caps stages, as for a session's `send` frame.
  const sendFrame: RequestFrame = { type: 'send', id: 0, messages: readable };
  const verdict = call.pipeline.admit(sendFrame, call.access, call.usage);
  permitted(verdict);
  const forbidden = verdict.ok ? verdict.forbidden : undefined;
  const allowed =
    forbidden === undefined || forbidden.size === 0
      ? readable
      : readable.filter((_, index) => forbidden.get(index) === undefined);
  let receipts: SendReceipt[] = [];
  if (allowed.length > 0) {
    // Counted in the connection's usage while it runs, without a promise of its own per call.
    call.usage.begin(sendFrame);
    try {
      receipts = await send(allowed);
    } finally {
      call.usage.end(sendFrame);
    }
  }
  if (receipts.length !== allowed.length) throw new Error('the engine answered fewer receipts than messages');
  // Receipts come in the order of `allowed`, which keeps the order of the readable messages.
  let readableIndex = 0;
  let allowedIndex = 0;
  const entries: SendResultEntry[] = converted.map((entry) => {
    if (!entry.ok) return { status: entry.status, messageId: entry.messageId, transactionId: '', offset: 0 };
    const refusal: BrokerError | undefined = forbidden?.get(readableIndex++);
    if (refusal !== undefined) {
      return {
        status: statusOfPayload(refusal),
        messageId: entry.message.messageId,
        transactionId: '',
        offset: 0,
      };
    }
    const receipt = receipts[allowedIndex++];
    if (receipt === undefined) throw new Error('a message allowed to be sent has no receipt');
    if (!receipt.ok) {
      return {
        status: statusOfPayload(receipt.error),
        messageId: receipt.messageId,
        transactionId: '',
        offset: 0,
      };
    }
    // No transactions here: the message id stands in for the transaction id the proxy fills in.
    return {
      status: OK_STATUS,
      messageId: receipt.messageId,
      transactionId: receipt.messageId,
      offset: receipt.offset,
    };
  });
  return { status: overallStatus(entries.map((entry) => entry.status)), entries };
}
