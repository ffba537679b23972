import { GROUP_NAME_PATTERN, isSubscribableTopic } from '@ricochet/protocol';
import type { DeliveryAddress } from '../../store/records.js';

/** What a receipt handle names: one lease of one message for one group. */
export interface ReceiptHandle extends DeliveryAddress {
  readonly lease: number;
}

const VERSION = '1';
// `~` appears in no topic or group name, so it separates fields unambiguously.
const SEPARATOR = '~';
const VERSION_PREFIX = `${VERSION}${SEPARATOR}`;

/**
 * Encode a lease as the opaque string clients hold. It is readable on purpose (logs, debugging);
 * it carries no authority of its own: the broker honours it only while its lease number is the
 * message's current lease, so an old or forged handle is simply unknown (S3, S4).
 */
export function encodeReceiptHandle(address: DeliveryAddress, lease: number): string {
  return `${VERSION}${SEPARATOR}${address.group}${SEPARATOR}${address.topic}${SEPARATOR}${address.offset}${SEPARATOR}${lease}`;
}

/**
 * Decode a receipt handle, or `undefined` when it is not one this broker issued. Parsed in place,
 * without splitting: it runs for every handle of every settle.
 */
export function decodeReceiptHandle(text: string): ReceiptHandle | undefined {
  if (!text.startsWith(VERSION_PREFIX)) return undefined;
  const groupEnd = text.indexOf(SEPARATOR, VERSION_PREFIX.length);
  const topicEnd = groupEnd < 0 ? -1 : text.indexOf(SEPARATOR, groupEnd + 1);
  const offsetEnd = topicEnd < 0 ? -1 : text.indexOf(SEPARATOR, topicEnd + 1);
  // Exactly five fields: a sixth separator makes it something else.
  if (offsetEnd < 0 || text.indexOf(SEPARATOR, offsetEnd + 1) >= 0) return undefined;
  const group = text.slice(VERSION_PREFIX.length, groupEnd);
  const topic = text.slice(groupEnd + 1, topicEnd);
  if (!GROUP_NAME_PATTERN.test(group) || !isSubscribableTopic(topic)) return undefined;
  const offset = parseWholeNumber(text, topicEnd + 1, offsetEnd);
  const lease = parseWholeNumber(text, offsetEnd + 1, text.length);
  if (offset === undefined || lease === undefined || lease < 1) return undefined;
  return { group, topic, offset, lease };
}

/** The most digits a whole number in a handle has: every safe integer fits in 16. */
const MAX_DIGITS = 16;

/** `text[start, end)` as a whole number written without a leading zero, or `undefined`. */
function parseWholeNumber(text: string, start: number, end: number): number | undefined {
  const length = end - start;
  if (length < 1 || length > MAX_DIGITS) return undefined;
  if (length > 1 && text.charCodeAt(start) === DIGIT_ZERO) return undefined;
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = text.charCodeAt(i) - DIGIT_ZERO;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  return Number.isSafeInteger(value) ? value : undefined;
}

const DIGIT_ZERO = 0x30;

/**
 * The group and topic a receipt handle of either kind names, read by position without checking the
 * rest, or `undefined` when the text has not a handle's shape. For permission checks on every
 * settle, where a full decode per handle would cost more than the settle's own lookup; a handle
 * that is wrong elsewhere is refused by the full decode that settling does anyway.
 */
export function groupAndTopicOfHandle(
  text: string,
): { readonly group: string; readonly topic: string } | undefined {
  const broadcast = text.startsWith(`${BROADCAST_VERSION}${SEPARATOR}`);
  if (!broadcast && !text.startsWith(`${VERSION}${SEPARATOR}`)) return undefined;
  const groupEnd = text.indexOf(SEPARATOR, 2);
  if (groupEnd < 0) return undefined;
  // A broadcast handle carries the instance's clientId between the group and the topic.
  const topicStart = broadcast ? text.indexOf(SEPARATOR, groupEnd + 1) + 1 : groupEnd + 1;
  const topicEnd = topicStart === 0 ? -1 : text.indexOf(SEPARATOR, topicStart);
  if (topicEnd < 0) return undefined;
  return { group: text.slice(2, groupEnd), topic: text.slice(topicStart, topicEnd) };
}

/** What a broadcast receipt handle names: one lease of one message for one instance of a group (B1). */
export interface BroadcastReceiptHandle extends ReceiptHandle {
  readonly clientId: string;
}

const BROADCAST_VERSION = 'B';

/**
 * The longest clientId, in UTF-8 bytes, a broadcast instance may have: its handle carries it
 * (base64url), and with the longest group and topic names and offsets, and the queue a store split
 * into queues adds (`@63`, `cluster/routing/queue-addressing.ts`), 165 bytes keep a handle within the
 * protocol's 512 characters.
 */
export const MAX_BROADCAST_CLIENT_ID_BYTES = 165;

/**
 * A broadcast lease as clients hold it. The instance's `clientId` is free text, so it travels
 * base64url-encoded: it cannot contain the separator then.
 */
export function encodeBroadcastReceiptHandle(handle: BroadcastReceiptHandle): string {
  const clientId = Buffer.from(handle.clientId, 'utf8').toString('base64url');
  return [BROADCAST_VERSION, handle.group, clientId, handle.topic, handle.offset, handle.lease].join(
    SEPARATOR,
  );
}

/** Whether `text` claims to be a broadcast receipt handle (decode it to know whether it is one). */
export function isBroadcastReceiptHandle(text: string): boolean {
  return text.startsWith(`${BROADCAST_VERSION}${SEPARATOR}`);
}

/** Decode a broadcast receipt handle, or `undefined` when it is not one this broker issued. */
export function decodeBroadcastReceiptHandle(text: string): BroadcastReceiptHandle | undefined {
  const parts = text.split(SEPARATOR);
  if (parts.length !== 6 || parts[0] !== BROADCAST_VERSION) return undefined;
  const [, group = '', encodedClientId = '', topic = '', offsetText = '', leaseText = ''] = parts;
  const clientId = Buffer.from(encodedClientId, 'base64url').toString('utf8');
  if (clientId === '' || Buffer.from(clientId, 'utf8').toString('base64url') !== encodedClientId)
    return undefined;
  const rest = decodeReceiptHandle([VERSION, group, topic, offsetText, leaseText].join(SEPARATOR));
  return rest && { ...rest, clientId };
}
