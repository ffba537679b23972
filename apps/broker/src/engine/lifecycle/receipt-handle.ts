import { GROUP_NAME_PATTERN, isSubscribableTopic } from '@ricochet/protocol';
import type { DeliveryAddress } from '../../store/records.js';

/**
 * The receipt handle: the one module that knows its text. Everyone else holds a {@link ReceiptHandle}
 * value, and turns it into the string clients hold with {@link encodeReceiptHandle} and back with
 * {@link decodeReceiptHandle}. The text has three dialects, and it is part of the protocol's past:
 * a handle issued before an upgrade must still settle after it, so the bytes never change.
 *
 * - a clustering group's lease: `1~<group>~<topic>~<offset>~<lease>`;
 * - a broadcast instance's lease (B1): `B~<group>~<clientId, base64url>~<topic>~<offset>~<lease>`;
 * - either, issued by one queue of a store split into queues: `<handle>@<queue>`, so that any
 *   broker can route a settle back to the queue that issued it (`cluster/routing/`). The mark goes
 *   at the end because the permission check ({@link groupAndTopicOfHandle}) reads from the front.
 *
 * `~` and `@` appear in no group or topic name, no base64url text and no number, so they separate
 * fields unambiguously. A handle is readable on purpose (logs, debugging) and carries no authority
 * of its own: the broker honours it only while its lease number is the message's current lease, so
 * an old or forged handle is simply unknown (S3, S4).
 */
export type ReceiptHandle = ClusteringReceiptHandle | BroadcastReceiptHandle;

/** What every handle names: one lease of one message, and the queue that issued it, if split. */
interface LeaseOfMessage extends DeliveryAddress {
  readonly lease: number;
  /** The queue of a store split into queues that issued it; absent when the engine's own. */
  readonly queue?: number | undefined;
}

/** One lease of one message for one clustering group. */
export interface ClusteringReceiptHandle extends LeaseOfMessage {
  readonly kind: 'clustering';
}

/** One lease of one message for one instance of a broadcasting group (B1). */
export interface BroadcastReceiptHandle extends LeaseOfMessage {
  readonly kind: 'broadcast';
  readonly clientId: string;
}

const CLUSTERING_VERSION = '1';
const BROADCAST_VERSION = 'B';
const SEPARATOR = '~';
const QUEUE_MARK = '@';
const CLUSTERING_PREFIX = `${CLUSTERING_VERSION}${SEPARATOR}`;
const BROADCAST_PREFIX = `${BROADCAST_VERSION}${SEPARATOR}`;

/**
 * The longest clientId, in UTF-8 bytes, a broadcast instance may have: its handle carries it
 * (base64url), and with the longest group and topic names and offsets, and the queue a store split
 * into queues adds (`@63`), 165 bytes keep a handle within the protocol's 512 characters.
 */
export const MAX_BROADCAST_CLIENT_ID_BYTES = 165;

/** The text clients hold for `handle`. */
export function encodeReceiptHandle(handle: ReceiptHandle): string {
  const lease = `${handle.topic}${SEPARATOR}${handle.offset}${SEPARATOR}${handle.lease}`;
  const text =
    handle.kind === 'clustering'
      ? `${CLUSTERING_PREFIX}${handle.group}${SEPARATOR}${lease}`
      : `${BROADCAST_PREFIX}${handle.group}${SEPARATOR}${Buffer.from(handle.clientId, 'utf8').toString('base64url')}${SEPARATOR}${lease}`;
  return handle.queue === undefined ? text : withQueue(text, handle.queue);
}

/**
 * `text` with the queue that issued it: what {@link encodeReceiptHandle} gives for the decoded
 * handle with `queue` set, without decoding it again. Only for handles this broker's engine has
 * just issued (every delivery of a split store passes here, so it is a concatenation).
 */
export function withQueue(text: string, queue: number): string {
  return `${text}${QUEUE_MARK}${queue}`;
}

/**
 * The handle `text` names, or `undefined` when it is not one this broker issued. Parsed in place,
 * without splitting and into one object: it runs for every handle of every settle.
 */
export function decodeReceiptHandle(text: string): ReceiptHandle | undefined {
  const mark = text.lastIndexOf(QUEUE_MARK);
  const end = mark < 0 ? text.length : mark;
  const queue = mark < 0 ? undefined : parseQueue(text, mark + 1);
  if (mark >= 0 && queue === undefined) return undefined;
  if (text.startsWith(CLUSTERING_PREFIX)) return decodeClustering(text, end, queue);
  if (text.startsWith(BROADCAST_PREFIX)) return decodeBroadcast(text, end, queue);
  return undefined;
}

/** `1~<group>~<topic>~<offset>~<lease>` in `text[0, end)`. */
function decodeClustering(
  text: string,
  end: number,
  queue: number | undefined,
): ClusteringReceiptHandle | undefined {
  const groupEnd = nextSeparator(text, CLUSTERING_PREFIX.length, end);
  const topicEnd = nextSeparator(text, groupEnd + 1, end);
  const offsetEnd = nextSeparator(text, topicEnd + 1, end);
  // Exactly five fields: a sixth separator makes it something else.
  if (groupEnd < 0 || topicEnd < 0 || offsetEnd < 0 || nextSeparator(text, offsetEnd + 1, end) >= 0)
    return undefined;
  const group = text.slice(CLUSTERING_PREFIX.length, groupEnd);
  const topic = text.slice(groupEnd + 1, topicEnd);
  if (!GROUP_NAME_PATTERN.test(group) || !isSubscribableTopic(topic)) return undefined;
  const offset = parseWholeNumber(text, topicEnd + 1, offsetEnd);
  const lease = parseWholeNumber(text, offsetEnd + 1, end);
  if (offset === undefined || lease === undefined || lease < 1) return undefined;
  return { kind: 'clustering', group, topic, offset, lease, queue };
}

/** `B~<group>~<clientId, base64url>~<topic>~<offset>~<lease>` in `text[0, end)`. */
function decodeBroadcast(
  text: string,
  end: number,
  queue: number | undefined,
): BroadcastReceiptHandle | undefined {
  const groupEnd = nextSeparator(text, BROADCAST_PREFIX.length, end);
  const clientIdEnd = nextSeparator(text, groupEnd + 1, end);
  const topicEnd = nextSeparator(text, clientIdEnd + 1, end);
  const offsetEnd = nextSeparator(text, topicEnd + 1, end);
  if (
    groupEnd < 0 ||
    clientIdEnd < 0 ||
    topicEnd < 0 ||
    offsetEnd < 0 ||
    nextSeparator(text, offsetEnd + 1, end) >= 0
  )
    return undefined;
  const group = text.slice(BROADCAST_PREFIX.length, groupEnd);
  const topic = text.slice(clientIdEnd + 1, topicEnd);
  if (!GROUP_NAME_PATTERN.test(group) || !isSubscribableTopic(topic)) return undefined;
  const encodedClientId = text.slice(groupEnd + 1, clientIdEnd);
  const clientId = Buffer.from(encodedClientId, 'base64url').toString('utf8');
  // One spelling per clientId: base64url decoding skips what is not base64url.
  if (clientId === '' || Buffer.from(clientId, 'utf8').toString('base64url') !== encodedClientId)
    return undefined;
  const offset = parseWholeNumber(text, topicEnd + 1, offsetEnd);
  const lease = parseWholeNumber(text, offsetEnd + 1, end);
  if (offset === undefined || lease === undefined || lease < 1) return undefined;
  return { kind: 'broadcast', group, clientId, topic, offset, lease, queue };
}

/**
 * The position of the first separator in `text[from, end)`, or -1; also -1 when `from` is 0 (a
 * previous search found none, and returned -1), so a chain of calls fails once and stays failed.
 */
function nextSeparator(text: string, from: number, end: number): number {
  if (from === 0) return -1;
  const at = text.indexOf(SEPARATOR, from);
  return at >= 0 && at < end ? at : -1;
}

/** The most digits a whole number in a handle has: every safe integer fits in 16. */
const MAX_DIGITS = 16;
/** The most digits of a queue: a store has at most 64. */
const MAX_QUEUE_DIGITS = 2;

/** `text[start, end)` as a whole number written without a leading zero, or `undefined`. */
function parseWholeNumber(
  text: string,
  start: number,
  end: number,
  maxDigits = MAX_DIGITS,
): number | undefined {
  const length = end - start;
  if (length < 1 || length > maxDigits) return undefined;
  if (length > 1 && text.charCodeAt(start) === DIGIT_ZERO) return undefined;
  let value = 0;
  for (let i = start; i < end; i++) {
    const digit = text.charCodeAt(i) - DIGIT_ZERO;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  return Number.isSafeInteger(value) ? value : undefined;
}

/** The queue written from `start` to the end of `text`, or `undefined`. */
function parseQueue(text: string, start: number): number | undefined {
  return parseWholeNumber(text, start, text.length, MAX_QUEUE_DIGITS);
}

const DIGIT_ZERO = 0x30;

/** Whether `text` claims to be a broadcast receipt handle (decode it to know whether it is one). */
export function isBroadcastReceiptHandle(text: string): boolean {
  return text.startsWith(BROADCAST_PREFIX);
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
  const broadcast = isBroadcastReceiptHandle(text);
  if (!broadcast && !text.startsWith(CLUSTERING_PREFIX)) return undefined;
  const groupEnd = text.indexOf(SEPARATOR, 2);
  if (groupEnd < 0) return undefined;
  // A broadcast handle carries the instance's clientId between the group and the topic.
  const topicStart = broadcast ? text.indexOf(SEPARATOR, groupEnd + 1) + 1 : groupEnd + 1;
  const topicEnd = topicStart === 0 ? -1 : text.indexOf(SEPARATOR, topicStart);
  if (topicEnd < 0) return undefined;
  return { group: text.slice(2, groupEnd), topic: text.slice(topicStart, topicEnd) };
}

/** The group and topic of the leases a run of handles names. */
export interface HandleNames {
  readonly group: string;
  readonly topic: string;
}

/**
 * The leases a settle batch's handles name, decoded once into numbers. The handle at index `i`
 * names the message at `offsets[i]` of `names[nameIndex[i]]`, and its lease `leases[i]`; a
 * `nameIndex` of -1 says it is no clustering handle of the engine's own (a broadcast handle, one
 * naming a queue, or no handle at all: {@link decodeReceiptHandle} tells which).
 */
export interface DecodedLeaseHandles {
  readonly names: readonly HandleNames[];
  readonly nameIndex: readonly number[];
  readonly offsets: readonly number[];
  readonly leases: readonly number[];
}

/**
 * Decode a settle batch's clustering handles (`1~<group>~<topic>~<offset>~<lease>`, no queue) into
 * {@link DecodedLeaseHandles}. A consumer acks in order, and a batch's handles mostly share their
 * group and topic: the text before the offset is checked once, by a full decode, and each next
 * handle that starts with it costs the parse of its two numbers. Whatever the shortcut does not
 * take (another group or topic, a stray character) goes through the full decode, so the result
 * is always what {@link decodeReceiptHandle} says of each handle.
 */
export function decodeLeaseHandles(
  items: readonly { readonly receiptHandle: string }[],
): DecodedLeaseHandles {
  const count = items.length;
  const names: HandleNames[] = [];
  // Plain arrays, filled in order (packed): typed arrays cost more to allocate than a frame's
  // 32 handles cost to parse.
  const nameIndex: number[] = [];
  const offsets: number[] = [];
  const leases: number[] = [];
  // `1~<group>~<topic>~` of the last handle decoded in full; group and topic hold no separator.
  let prefix = '';
  for (let i = 0; i < count; i++) {
    const text = (items[i] as { readonly receiptHandle: string }).receiptHandle;
    if (prefix !== '' && text.startsWith(prefix)) {
      const offsetEnd = text.indexOf(SEPARATOR, prefix.length);
      // Digits only after the prefix: a queue mark or a sixth field fails the parse, and the full
      // decode below has the last word on such a handle.
      const offset = offsetEnd < 0 ? undefined : parseWholeNumber(text, prefix.length, offsetEnd);
      const lease = offset === undefined ? undefined : parseWholeNumber(text, offsetEnd + 1, text.length);
      if (offset !== undefined && lease !== undefined && lease >= 1) {
        nameIndex.push(names.length - 1);
        offsets.push(offset);
        leases.push(lease);
        continue;
      }
    }
    const handle = decodeReceiptHandle(text);
    if (handle?.kind !== 'clustering' || handle.queue !== undefined) {
      nameIndex.push(-1);
      offsets.push(0);
      leases.push(0);
      continue;
    }
    names.push({ group: handle.group, topic: handle.topic });
    nameIndex.push(names.length - 1);
    offsets.push(handle.offset);
    leases.push(handle.lease);
    prefix = `${CLUSTERING_PREFIX}${handle.group}${SEPARATOR}${handle.topic}${SEPARATOR}`;
  }
  return { names, nameIndex, offsets, leases };
}
