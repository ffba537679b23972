import type { StoredMessage } from '../../store/records.js';

/** How many of a topic's newest messages stay in memory. */
const MAX_RECENT_MESSAGES = 4_096;
/** How many body bytes the recent messages of one topic may hold. */
const MAX_RECENT_BODY_BYTES = 16 * 1024 * 1024;

/**
 * The newest messages of one topic, kept in memory as they are appended, so that consumers at the
 * head of the log are served without waiting for the commit that makes them readable from the
 * store, and without decoding them back from it. Older messages are read from the store.
 *
 * A consumer may therefore see a message before its producer's send resolved (which waits for the
 * durable commit). If the broker then crashed before that commit, the send failed and the producer
 * retries it with the same id: the consumer sees it again — at-least-once, as with any retry.
 */
export class RecentMessages {
  #messages: StoredMessage[] = [];
  /** The offset of `#messages[#head]`. */
  #startOffset = 0;
  #head = 0;
  #bodyBytes = 0;

  /** Remember a message appended at the end of the log; offsets arrive in order. */
  append(message: StoredMessage): void {
    if (this.#messages.length - this.#head === 0 || message.offset !== this.#endOffset()) {
      // A gap (first message, or offsets the store reused after a restart): start over from here.
      this.#messages = [];
      this.#head = 0;
      this.#bodyBytes = 0;
      this.#startOffset = message.offset;
    }
    this.#messages.push(message);
    this.#bodyBytes += message.body.byteLength;
    while (
      this.#messages.length - this.#head > 1 &&
      (this.#messages.length - this.#head > MAX_RECENT_MESSAGES || this.#bodyBytes > MAX_RECENT_BODY_BYTES)
    ) {
      this.#bodyBytes -= this.#messages[this.#head]?.body.byteLength ?? 0;
      this.#messages[this.#head] = undefined as unknown as StoredMessage;
      this.#head++;
      this.#startOffset++;
    }
    // Reclaim the dead prefix once it dominates.
    if (this.#head > 1_024 && this.#head * 2 > this.#messages.length) {
      this.#messages = this.#messages.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Forget every message below `offset` (retention deleted them). */
  dropBefore(offset: number): void {
    while (this.#head < this.#messages.length && this.#startOffset < offset) {
      this.#bodyBytes -= this.#messages[this.#head]?.body.byteLength ?? 0;
      this.#messages[this.#head] = undefined as unknown as StoredMessage;
      this.#head++;
      this.#startOffset++;
    }
    if (this.#head === this.#messages.length) {
      // Nothing left: the next append starts over from its own offset.
      this.#messages = [];
      this.#head = 0;
      this.#bodyBytes = 0;
    }
  }

  /** The message at `offset`, if it is still kept. */
  get(offset: number): StoredMessage | undefined {
    if (offset < this.#startOffset) return undefined;
    return this.#messages[this.#head + (offset - this.#startOffset)];
  }

  /** Replace a remembered message by a newer version of it (same offset), if it is still kept. */
  replace(message: StoredMessage): void {
    const index = this.#head + (message.offset - this.#startOffset);
    if (message.offset >= this.#startOffset && index < this.#messages.length) this.#messages[index] = message;
  }

  /**
   * Up to `limit` messages from `fromOffset` on, or `undefined` when `fromOffset` is older than
   * what is kept (the caller reads the store instead).
   */
  read(fromOffset: number, limit: number): StoredMessage[] | undefined {
    // Empty (nothing appended since the broker started): it knows nothing about the log.
    if (this.#messages.length === this.#head) return undefined;
    if (fromOffset < this.#startOffset || fromOffset > this.#endOffset()) return undefined;
    const from = this.#head + (fromOffset - this.#startOffset);
    return this.#messages.slice(from, from + limit);
  }

  #endOffset(): number {
    return this.#startOffset + (this.#messages.length - this.#head);
  }
}
