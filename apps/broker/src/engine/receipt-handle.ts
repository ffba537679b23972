import { GROUP_NAME_PATTERN, isSubscribableTopic } from '@ricochet/protocol';
import type { DeliveryAddress } from '../store/records.js';

/** What a receipt handle names: one lease of one message for one group. */
export interface ReceiptHandle extends DeliveryAddress {
  readonly lease: number;
}

const VERSION = '1';
// `~` appears in no topic or group name, so it separates fields unambiguously.
const SEPARATOR = '~';

/**
 * Encode a lease as the opaque string clients hold. It is readable on purpose (logs, debugging);
 * it carries no authority of its own: the broker honours it only while its lease number is the
 * message's current lease, so an old or forged handle is simply unknown (S3, S4).
 */
export function encodeReceiptHandle(handle: ReceiptHandle): string {
  return [VERSION, handle.group, handle.topic, handle.offset, handle.lease].join(SEPARATOR);
}

/** Decode a receipt handle, or `undefined` when it is not one this broker issued. */
export function decodeReceiptHandle(text: string): ReceiptHandle | undefined {
  const parts = text.split(SEPARATOR);
  if (parts.length !== 5 || parts[0] !== VERSION) return undefined;
  const [, group = '', topic = '', offsetText = '', leaseText = ''] = parts;
  if (!GROUP_NAME_PATTERN.test(group) || !isSubscribableTopic(topic)) return undefined;
  const offset = parseWholeNumber(offsetText);
  const lease = parseWholeNumber(leaseText);
  if (offset === undefined || lease === undefined || lease < 1) return undefined;
  return { group, topic, offset, lease };
}

function parseWholeNumber(text: string): number | undefined {
  if (!/^(0|[1-9][0-9]{0,15})$/.test(text)) return undefined;
  const value = Number(text);
  return Number.isSafeInteger(value) ? value : undefined;
}

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
 * (base64url), and with the longest group and topic names and offsets, 170 bytes keep a handle
 * within the protocol's 512 characters.
 */
export const MAX_BROADCAST_CLIENT_ID_BYTES = 170;

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
