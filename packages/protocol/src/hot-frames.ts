import { MAX_INVISIBLE_DURATION_MS, MAX_RETRY_DELAY_MS, MIN_INVISIBLE_DURATION_MS } from '@ricochet/core';
import { MAX_AWAIT_DURATION_MS, MAX_RECEIVE_MESSAGES, MAX_SEND_BATCH_MESSAGES } from './limits.js';
import {
  GROUP_NAME_PATTERN,
  isSubscribableTopic,
  MESSAGE_ID_PATTERN,
  TAG_PATTERN,
  TOPIC_NAME_PATTERN,
} from './names.js';
import type {
  AckFrame,
  BrokerFrame,
  ClientFrame,
  CreditFrame,
  DeliverFrame,
  MessagesFrame,
  NackFrame,
  ReceiveFrame,
  SendFrame,
  SendResultFrame,
  SettledFrame,
} from './schemas/frames.js';
import type { OutgoingMessage } from './schemas/message.js';
import { parseTagFilter } from './tag-filter.js';

/**
 * Exact checks for the frames that carry the traffic, in their everyday shape: `send`, `ack`,
 * `nack`, `credit` and `receive` from clients; `deliver`, `messages`, `sendResult` and an empty `settled` from the broker.
 *
 * zod's generic parse costs a client about a third of its CPU on a push stream and allocates a
 * copy of every frame, so the codec tries these first. Each one is *sound, not complete*: it
 * returns a frame only when the zod schema would accept the value and return the same frame (no
 * unknown key to strip, every field of a type and range the schema allows, bytes re-viewed the
 * way `bytesSchema` does), and `undefined` for anything else, however valid — an optional field
 * it does not know (`keys`, `properties`, a delay, `deadLetter`…), a failed receipt, a `settled`
 * with failures — which then goes to zod, for its verdict and its error message.
 * `hot-frames.test.ts` holds them to that against the schemas, on valid and damaged frames.
 *
 * The value is the codec's own, fresh from unpacking, so it is returned as the frame itself: a
 * `body` is replaced in place by its plain-`Uint8Array` view.
 */
export function hotClientFrame(value: Record<string, unknown>): ClientFrame | undefined {
  switch (value.type) {
    case 'send':
      return hotSend(value);
    case 'ack':
      return hotAck(value);
    case 'nack':
      return hotNack(value);
    case 'credit':
      return hotCredit(value);
    case 'receive':
      return hotReceive(value);
    default:
      return undefined;
  }
}

/** The broker's side of {@link hotClientFrame}, for clients. */
export function hotBrokerFrame(value: Record<string, unknown>): BrokerFrame | undefined {
  switch (value.type) {
    case 'deliver':
      return hotDeliver(value);
    case 'messages':
      return hotMessages(value);
    case 'sendResult':
      return hotSendResult(value);
    case 'settled':
      return hotSettled(value);
    default:
      return undefined;
  }
}

const UINT32_MAX = 0xffff_ffff;
const MAX_CREDITS = 65_536;
const MAX_HANDLES = 1_024;
const MAX_RECEIPT_HANDLE_LENGTH = 512;
/** `subscriptionsSchema`'s bound on the topics of one subscription. */
const MAX_SUBSCRIBED_TOPICS = 64;

function hotSend(frame: Record<string, unknown>): SendFrame | undefined {
  if (!hasOnlyKeys(frame, FRAME_KEYS.send) || !isRequestId(frame.id)) return undefined;
  const messages = frame.messages;
  if (!Array.isArray(messages) || messages.length < 1 || messages.length > MAX_SEND_BATCH_MESSAGES)
    return undefined;
  for (const message of messages) if (!isPlainOutgoingMessage(message)) return undefined;
  for (const message of messages) viewBody(message);
  return frame as unknown as SendFrame;
}

/**
 * One message to send, checked by hand as a `send` frame's messages are: the very value
 * `outgoingMessageSchema` parses it to (its body a plain `Uint8Array` view), or `undefined` for
 * anything less plain, which then goes to zod for its verdict and its error message. For front
 * doors that build messages themselves (the RocketMQ endpoint makes one per `SendMessage`), so
 * every front door checks a message the same way at the same cost.
 */
export function hotOutgoingMessage(message: unknown): OutgoingMessage | undefined {
  if (!isPlainOutgoingMessage(message)) return undefined;
  viewBody(message);
  return message as unknown as OutgoingMessage;
}

function hotAck(frame: Record<string, unknown>): AckFrame | undefined {
  if (!hasOnlyKeys(frame, FRAME_KEYS.ack) || !isRequestId(frame.id)) return undefined;
  const handles = frame.receiptHandles;
  if (!Array.isArray(handles) || handles.length < 1 || handles.length > MAX_HANDLES) return undefined;
  for (const handle of handles) if (!isReceiptHandle(handle)) return undefined;
  return frame as unknown as AckFrame;
}

/** A consumer's failures: a retry storm is a stream of these, one or more items per delivery. */
function hotNack(frame: Record<string, unknown>): NackFrame | undefined {
  if (!hasOnlyKeys(frame, FRAME_KEYS.nack) || !isRequestId(frame.id)) return undefined;
  const items = frame.items;
  if (!Array.isArray(items) || items.length < 1 || items.length > MAX_HANDLES) return undefined;
  for (const item of items) if (!isNackItem(item)) return undefined;
  return frame as unknown as NackFrame;
}

/** What `nackItemSchema` accepts, its refinement included: a dead-lettered item takes no delay. */
function isNackItem(item: unknown): boolean {
  if (!isPlainObject(item) || !hasOnlyKeys(item, NACK_ITEM_KEYS) || !isReceiptHandle(item.receiptHandle))
    return false;
  if ('reason' in item && !(typeof item.reason === 'string' && item.reason.length <= MAX_NACK_REASON_LENGTH))
    return false;
  const delayed = 'retryAfterMs' in item;
  if (delayed && !isWholeNumber(item.retryAfterMs, 0, MAX_RETRY_DELAY_MS)) return false;
  if ('deadLetter' in item && (item.deadLetter !== true || delayed)) return false;
  return true;
}

function hotCredit(frame: Record<string, unknown>): CreditFrame | undefined {
  if (!hasOnlyKeys(frame, FRAME_KEYS.credit)) return undefined;
  if (!isWholeNumber(frame.subscriptionId, 0, Number.MAX_SAFE_INTEGER)) return undefined;
  if (!isWholeNumber(frame.credits, 1, MAX_CREDITS)) return undefined;
  return frame as unknown as CreditFrame;
}

/** A simple consumer's receive, not on behalf of anyone: one per batch it leases. */
function hotReceive(frame: Record<string, unknown>): ReceiveFrame | undefined {
  if (!hasOnlyKeys(frame, FRAME_KEYS.receive) || !isRequestId(frame.id)) return undefined;
  if (!isMatch(frame.group, GROUP_NAME_PATTERN) || !isSubscriptions(frame.subscriptions)) return undefined;
  if (!isWholeNumber(frame.maxMessages, 1, MAX_RECEIVE_MESSAGES)) return undefined;
  if (!isWholeNumber(frame.invisibleDurationMs, MIN_INVISIBLE_DURATION_MS, MAX_INVISIBLE_DURATION_MS))
    return undefined;
  if (!isWholeNumber(frame.awaitDurationMs, 0, MAX_AWAIT_DURATION_MS)) return undefined;
  return frame as unknown as ReceiveFrame;
}

/** What `subscriptionsSchema` accepts: 1 to 64 subscribable topics, each with a tag expression. */
function isSubscriptions(value: unknown): boolean {
  if (!isPlainObject(value)) return false;
  let count = 0;
  for (const topic in value) {
    const expression = value[topic];
    if (!isSubscribableTopic(topic) || typeof expression !== 'string') return false;
    if (!parseTagFilter(expression).ok || ++count > MAX_SUBSCRIBED_TOPICS) return false;
  }
  return count >= 1;
}

function hotDeliver(frame: Record<string, unknown>): DeliverFrame | undefined {
  if (!hasOnlyKeys(frame, FRAME_KEYS.deliver)) return undefined;
  if (!isWholeNumber(frame.subscriptionId, 0, Number.MAX_SAFE_INTEGER)) return undefined;
  const messages = frame.messages;
  if (!Array.isArray(messages) || messages.length < 1) return undefined;
  for (const message of messages) if (!isPlainDeliveredMessage(message)) return undefined;
  for (const message of messages) viewBody(message);
  return frame as unknown as DeliverFrame;
}

function hotMessages(frame: Record<string, unknown>): MessagesFrame | undefined {
  if (!hasOnlyKeys(frame, FRAME_KEYS.messages) || !isRequestId(frame.id)) return undefined;
  const messages = frame.messages;
  if (!Array.isArray(messages) || messages.length > MAX_RECEIVE_MESSAGES) return undefined;
  for (const message of messages) if (!isPlainDeliveredMessage(message)) return undefined;
  for (const message of messages) viewBody(message);
  return frame as unknown as MessagesFrame;
}

function hotSendResult(frame: Record<string, unknown>): SendResultFrame | undefined {
  if (!hasOnlyKeys(frame, FRAME_KEYS.sendResult) || !isRequestId(frame.id)) return undefined;
  const receipts = frame.receipts;
  if (!Array.isArray(receipts)) return undefined;
  for (const receipt of receipts) if (!isStoredReceipt(receipt)) return undefined;
  return frame as unknown as SendResultFrame;
}

/** Only the all-settled answer: failures carry error payloads, left to zod. */
function hotSettled(frame: Record<string, unknown>): SettledFrame | undefined {
  if (!hasOnlyKeys(frame, FRAME_KEYS.settled) || !isRequestId(frame.id)) return undefined;
  const failures = frame.failures;
  if (!Array.isArray(failures) || failures.length !== 0) return undefined;
  return frame as unknown as SettledFrame;
}

/** Each schema's keys; a required one missing fails its own field check. */
const FRAME_KEYS = {
  send: new Set(['type', 'id', 'messages']),
  ack: new Set(['type', 'id', 'receiptHandles']),
  nack: new Set(['type', 'id', 'items']),
  credit: new Set(['type', 'subscriptionId', 'credits']),
  receive: new Set([
    'type',
    'id',
    'group',
    'subscriptions',
    'maxMessages',
    'invisibleDurationMs',
    'awaitDurationMs',
  ]),
  deliver: new Set(['type', 'subscriptionId', 'messages']),
  messages: new Set(['type', 'id', 'messages']),
  sendResult: new Set(['type', 'id', 'receipts']),
  settled: new Set(['type', 'id', 'failures']),
} as const;
const NACK_ITEM_KEYS = new Set(['receiptHandle', 'reason', 'retryAfterMs', 'deadLetter']);
/** `nackItemSchema`'s bound on a failure's reason. */
const MAX_NACK_REASON_LENGTH = 1_024;
const OUTGOING_MESSAGE_KEYS = new Set(['messageId', 'topic', 'tag', 'body', 'bornAt']);
const DELIVERED_MESSAGE_KEYS = new Set([
  'messageId',
  'topic',
  'tag',
  'body',
  'bornAt',
  'deliveryAttempt',
  'offset',
  'receiptHandle',
]);
const STORED_RECEIPT_KEYS = new Set(['ok', 'messageId', 'offset', 'duplicate']);

/** A message with no optional field but `tag`: what `outgoingMessageSchema` accepts unchanged. */
function isPlainOutgoingMessage(message: unknown): message is Record<string, unknown> {
  return (
    isPlainObject(message) &&
    hasOnlyKeys(message, OUTGOING_MESSAGE_KEYS) &&
    isMatch(message.messageId, MESSAGE_ID_PATTERN) &&
    isMatch(message.topic, TOPIC_NAME_PATTERN) &&
    (message.tag === undefined ? !('tag' in message) : isMatch(message.tag, TAG_PATTERN)) &&
    message.body instanceof Uint8Array &&
    isWholeNumber(message.bornAt, 0, Number.MAX_SAFE_INTEGER)
  );
}

/** A delivery with no optional field but `tag` (no `deadLetter`): what `deliveredMessageSchema` accepts unchanged. */
function isPlainDeliveredMessage(message: unknown): message is Record<string, unknown> {
  return (
    isPlainObject(message) &&
    hasOnlyKeys(message, DELIVERED_MESSAGE_KEYS) &&
    isMatch(message.messageId, MESSAGE_ID_PATTERN) &&
    typeof message.topic === 'string' &&
    isSubscribableTopic(message.topic) &&
    (message.tag === undefined ? !('tag' in message) : isMatch(message.tag, TAG_PATTERN)) &&
    message.body instanceof Uint8Array &&
    isWholeNumber(message.bornAt, 0, Number.MAX_SAFE_INTEGER) &&
    isWholeNumber(message.deliveryAttempt, 1, Number.MAX_SAFE_INTEGER) &&
    isWholeNumber(message.offset, 0, Number.MAX_SAFE_INTEGER) &&
    isReceiptHandle(message.receiptHandle)
  );
}

function isStoredReceipt(receipt: unknown): boolean {
  return (
    isPlainObject(receipt) &&
    hasOnlyKeys(receipt, STORED_RECEIPT_KEYS) &&
    receipt.ok === true &&
    isMatch(receipt.messageId, MESSAGE_ID_PATTERN) &&
    isWholeNumber(receipt.offset, 0, Number.MAX_SAFE_INTEGER) &&
    typeof receipt.duplicate === 'boolean'
  );
}

/** `bytesSchema`'s transform: MessagePack `bin` decodes to a Buffer, frames carry a plain view of it. */
function viewBody(message: Record<string, unknown>): void {
  const body = message.body as Uint8Array;
  if (body.constructor !== Uint8Array) {
    message.body = new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** No key outside `allowed` (zod would strip it, so its output would differ from the value). */
function hasOnlyKeys(value: Record<string, unknown>, allowed: ReadonlySet<string>): boolean {
  for (const key in value) if (!allowed.has(key)) return false;
  return true;
}

function isRequestId(value: unknown): boolean {
  return isWholeNumber(value, 0, UINT32_MAX);
}

function isReceiptHandle(value: unknown): boolean {
  return typeof value === 'string' && value.length >= 1 && value.length <= MAX_RECEIPT_HANDLE_LENGTH;
}

function isWholeNumber(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;
}

function isMatch(value: unknown, pattern: RegExp): value is string {
  return typeof value === 'string' && pattern.test(value);
}
