import type { DeliveredMessage } from './schemas/message.js';

/** What {@link deliveredMessageBytes} reads of a message: a delivered one, or one as a broker stores it. */
export interface SizedMessage {
  readonly body: Uint8Array;
  readonly properties?: Readonly<Record<string, string>> | undefined;
  readonly keys?: readonly string[] | undefined;
  readonly deadLetter?: { readonly reason: string } | undefined;
}

/**
 * The largest frame the broker assumes a peer reads when its `hello` announces none (clients
 * before `hello.maxFrameBytes`): 64 MiB, below the 100 MiB `maxPayload` the `ws` package reads by
 * default, the smallest limit of the WebSocket implementations those clients run on.
 */
export const DEFAULT_PEER_MAX_FRAME_BYTES = 64 * 1024 * 1024;

/**
 * The most bytes of messages one frame of deliveries carries, whatever the peer reads: 16 MiB. A
 * frame is encoded whole before it is written and decoded whole before any of its messages is
 * handed on, so past a few megabytes a larger frame saves nothing and holds memory twice on both
 * sides. One message larger than this (a broker with a body limit above it) travels alone.
 */
export const MAX_DELIVERY_FRAME_BYTES = 16 * 1024 * 1024;

/** Room kept in a frame of deliveries for its own fields (`type`, ids, the array header). */
const FRAME_ENVELOPE_BYTES = 1024;

/**
 * Room for a delivered message's fields besides its body, properties and keys: its id, topic, tag,
 * message group, receipt handle, offsets and the dead-letter details of a DLQ message, with their
 * MessagePack headers. Generous, since an estimate under the truth could make a frame too large.
 */
const MESSAGE_FIELDS_BYTES = 2048;

/** MessagePack's header of one string at most (str 32). */
const STRING_HEADER_BYTES = 5;

/**
 * An upper bound on the bytes a message takes in a `deliver` or `messages` frame, reading only
 * lengths: the body, each property, key and dead-letter reason (as UTF-16 code units × 3, the
 * most UTF-8 can make of them, so no string is encoded to count it), and a fixed allowance for
 * everything else.
 */
export function deliveredMessageBytes(message: SizedMessage): number {
  let bytes = message.body.byteLength + MESSAGE_FIELDS_BYTES;
  const properties = message.properties;
  if (properties !== undefined) {
    for (const key in properties) {
      bytes += 3 * (key.length + (properties[key]?.length ?? 0)) + 2 * STRING_HEADER_BYTES;
    }
  }
  const keys = message.keys;
  if (keys !== undefined) for (const key of keys) bytes += 3 * key.length + STRING_HEADER_BYTES;
  // A failure reason has no length limit of its own (a listener's error message).
  if (message.deadLetter !== undefined) bytes += 3 * message.deadLetter.reason.length;
  return bytes;
}

/**
 * The bytes of messages one frame of deliveries to a peer may carry: below the frame limit the
 * peer announced (`hello.maxFrameBytes`, else {@link DEFAULT_PEER_MAX_FRAME_BYTES}) and at most
 * {@link MAX_DELIVERY_FRAME_BYTES}.
 */
export function deliveryFrameBudget(peerMaxFrameBytes: number | undefined): number {
  const peerLimit = peerMaxFrameBytes ?? DEFAULT_PEER_MAX_FRAME_BYTES;
  return Math.max(1, Math.min(MAX_DELIVERY_FRAME_BYTES, peerLimit - FRAME_ENVELOPE_BYTES));
}

/**
 * Split deliveries, in order, into runs of at most `maxMessages` whose estimated bytes
 * ({@link deliveredMessageBytes}) stay within `maxBytes`; a message larger than `maxBytes` is a run
 * of its own, since it must go somehow and one message is the least a frame can carry. The common
 * case, one run of small messages, returns the input array itself.
 */
export function splitDeliveries(
  messages: DeliveredMessage[],
  maxMessages: number,
  maxBytes: number,
): DeliveredMessage[][] {
  const runs: DeliveredMessage[][] = [];
  let start = 0;
  let bytes = 0;
  for (let index = 0; index < messages.length; index++) {
    const size = deliveredMessageBytes(messages[index] as DeliveredMessage);
    const count = index - start;
    if (count > 0 && (count >= maxMessages || bytes + size > maxBytes)) {
      runs.push(messages.slice(start, index));
      start = index;
      bytes = 0;
    }
    bytes += size;
  }
  if (start === 0) runs.push(messages);
  else if (start < messages.length) runs.push(messages.slice(start));
  return runs;
}
