import type { DeadLetterInfo, DeliveredMessage } from '@ricochet/protocol';

/** Shared by every message delivered without keys or properties: frozen, so one is enough. */
const NO_KEYS: readonly string[] = Object.freeze([]);
const NO_PROPERTIES: Readonly<Record<string, string>> = Object.freeze({});

let readReceiptHandle: (message: ReceivedMessage) => string;
let writeReceiptHandle: (message: ReceivedMessage, receiptHandle: string) => void;

/**
 * A message a consumer received: its content and delivery facts, read-only. The receipt handle
 * that settles it stays inside; consumers pass the message itself to `ack` and friends, so a
 * handle replaced by `changeInvisibleDuration` (S4) can never be used by mistake.
 *
 * @see DESIGN.md §4 (what a received message exposes)
 */
export class ReceivedMessage {
  /** Stable for the message's whole life: across send retries, redeliveries and into the DLQ. */
  readonly messageId: string;
  /** The topic the message was read from (a user topic or a `%DLQ%<group>`). */
  readonly topic: string;
  readonly tag: string | undefined;
  /** Business keys; empty when the producer gave none. */
  readonly keys: readonly string[];
  /** The FIFO key (P5), when the producer gave one. */
  readonly messageGroup: string | undefined;
  /** User properties; empty when the producer gave none. */
  readonly properties: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
  /** When the producer created the message, epoch ms. */
  readonly bornAt: number;
  /** 1 on the first delivery, then 2, 3, … (P6). */
  readonly deliveryAttempt: number;
  /** The message's position in its topic's log. */
  readonly offset: number;
  /** Where the message came from, on messages read from a dead-letter topic (D1). */
  readonly deadLetter: DeadLetterInfo | undefined;
  #receiptHandle: string;

  static {
    // The handle's only readers and writers, handed to the functions below: a private field plus
    // a static block keeps it off the public surface without a WeakMap lookup per message.
    readReceiptHandle = (message) => message.#receiptHandle;
    writeReceiptHandle = (message, receiptHandle) => {
      message.#receiptHandle = receiptHandle;
    };
  }

  /** Wrap a message as the broker delivered it (in `deliver` or `messages`). */
  constructor(delivered: DeliveredMessage) {
    this.messageId = delivered.messageId;
    this.topic = delivered.topic;
    this.tag = delivered.tag;
    const { keys, properties } = delivered;
    this.keys = keys === undefined || keys.length === 0 ? NO_KEYS : Object.freeze([...keys]);
    this.messageGroup = delivered.messageGroup;
    this.properties = properties === undefined ? NO_PROPERTIES : Object.freeze({ ...properties });
    this.body = delivered.body;
    this.bornAt = delivered.bornAt;
    this.deliveryAttempt = delivered.deliveryAttempt;
    this.offset = delivered.offset;
    this.deadLetter =
      delivered.deadLetter === undefined ? undefined : Object.freeze({ ...delivered.deadLetter });
    this.#receiptHandle = delivered.receiptHandle;
  }

  /** The body decoded as UTF-8. */
  text(): string {
    return new TextDecoder().decode(this.body);
  }
}

/**
 * The current receipt handle of `message`. For Ricochet's own consumer packages; applications
 * settle a message by passing it to their consumer, never by handle.
 */
export function receiptHandleOf(message: ReceivedMessage): string {
  return readReceiptHandle(message);
}

/**
 * Replace the receipt handle of `message`, e.g. with the one `invisibilityChanged` returned (S4).
 * For Ricochet's own consumer packages. The swap is a single assignment, so every later read,
 * such as the one inside `ack`, sees either the old handle or the new one, never a mix.
 */
export function replaceReceiptHandle(message: ReceivedMessage, receiptHandle: string): void {
  writeReceiptHandle(message, receiptHandle);
}
