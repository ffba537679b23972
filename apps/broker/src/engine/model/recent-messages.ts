import type { StoredMessage } from '../../store/records.js';

/** How many of a topic's newest messages stay in memory. */
const MAX_RECENT_MESSAGES = 4_096;
/** How many body bytes the recent messages of one topic may hold. */
const MAX_RECENT_BODY_BYTES = 16 * 1024 * 1024;
/**
 * How long a message stays in memory once its write committed, in ms, measured from its append:
 * long enough for the consumers at the head of the log, which read it within a turn or two of its
 * append, and short enough that a slow topic's messages die young. Kept for the count bound
 * instead (4,096 messages: two seconds at 2,000 a second), every message outlived two or three
 * young-generation collections, each of which copied it: at W3's rate that was 0.9 MB copied per
 * scavenge, and scavenges of 5–9 ms were the broker's longest stalls.
 */
export const KEEP_COMMITTED_MS = 100;

/** When a message was appended, and the write that stores it. */
export interface AppendedAt {
  /** The topic registry's clock when the message was appended. */
  readonly atMs: number;
  /**
   * The store's promise for the message's write: once it resolves, the store serves the message,
   * and it may leave memory. The store hands every write of a transaction the same promise, so a
   * commit costs one callback here, not one per message.
   */
  readonly written: Promise<void>;
}

/** The last offset appended under one write promise: committed once that promise resolves. */
interface CommitMark {
  through: number;
  /** The {@link RecentMessages} run it belongs to: a mark of a run that started over is void. */
  readonly run: number;
}

/**
 * The newest messages of one topic, kept in memory as they are appended, so that consumers at the
 * head of the log are served without waiting for the commit that makes them readable from the
 * store, and without decoding them back from it. Older messages are read from the store.
 *
 * A consumer may therefore see a message before its producer's send resolved (which waits for the
 * durable commit). If the broker then crashed before that commit, the send failed and the producer
 * retries it with the same id: the consumer sees it again — at-least-once, as with any retry.
 *
 * A message leaves at the latest when the count or byte bound needs its room, and as soon as it
 * committed and {@link KEEP_COMMITTED_MS} passed since its append: never before it committed for
 * that reason, so a reader at the head always finds it here or in the store.
 */
export class RecentMessages {
  #messages: StoredMessage[] = [];
  /** When each of {@link #messages} was appended, index for index. */
  #appendedAtMs: number[] = [];
  /** Every offset up to this one is committed (-1: none known). */
  #committedThrough = -1;
  /** The write promise of the last append, and the last offset appended under it. */
  #lastWrite: Promise<void> | undefined;
  #lastMark: CommitMark | undefined;
  /** One more each time the kept run starts over: offsets may repeat across runs. */
  #run = 0;
  /** The offset of `#messages[#head]`. */
  #startOffset = 0;
  #head = 0;
  #bodyBytes = 0;

  /** Remember a message appended at the end of the log; offsets arrive in order. */
  append(message: StoredMessage, appended: AppendedAt): void {
    if (this.#messages.length - this.#head === 0 || message.offset !== this.#endOffset()) {
      // A gap (first message, or offsets the store reused after a restart): start over from here.
      this.#messages = [];
      this.#appendedAtMs = [];
      this.#head = 0;
      this.#bodyBytes = 0;
      this.#startOffset = message.offset;
      this.#committedThrough = -1;
      this.#lastWrite = undefined;
      this.#lastMark = undefined;
      this.#run++;
    }
    this.#messages.push(message);
    this.#appendedAtMs.push(appended.atMs);
    this.#bodyBytes += message.body.byteLength;
    this.#watchCommit(message.offset, appended.written);
    const oldestKeptMs = appended.atMs - KEEP_COMMITTED_MS;
    while (this.#messages.length - this.#head > 1 && this.#mayDropHead(oldestKeptMs)) {
      this.#dropHead();
    }
    // Reclaim the dead prefix once it dominates.
    if (this.#head > 1_024 && this.#head * 2 > this.#messages.length) {
      this.#messages = this.#messages.slice(this.#head);
      this.#appendedAtMs = this.#appendedAtMs.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Over a bound, or committed and appended before `oldestKeptMs`. */
  #mayDropHead(oldestKeptMs: number): boolean {
    if (this.#messages.length - this.#head > MAX_RECENT_MESSAGES || this.#bodyBytes > MAX_RECENT_BODY_BYTES) {
      return true;
    }
    return (
      this.#startOffset <= this.#committedThrough &&
      (this.#appendedAtMs[this.#head] ?? Number.POSITIVE_INFINITY) < oldestKeptMs
    );
  }

  #dropHead(): void {
    this.#bodyBytes -= this.#messages[this.#head]?.body.byteLength ?? 0;
    this.#messages[this.#head] = undefined as unknown as StoredMessage;
    this.#head++;
    this.#startOffset++;
  }

  /** Move {@link #committedThrough} to the last offset appended under `written` once it resolves. */
  #watchCommit(offset: number, written: Promise<void>): void {
    if (written === this.#lastWrite && this.#lastMark) {
      this.#lastMark.through = offset;
      return;
    }
    const mark: CommitMark = { through: offset, run: this.#run };
    this.#lastWrite = written;
    this.#lastMark = mark;
    // A write that fails commits nothing: its messages stay for the count bound, as before.
    written.then(
      () => {
        if (mark.run === this.#run && mark.through > this.#committedThrough) {
          this.#committedThrough = mark.through;
        }
      },
      () => {},
    );
  }

  /** Forget every message below `offset` (retention deleted them). */
  dropBefore(offset: number): void {
    while (this.#head < this.#messages.length && this.#startOffset < offset) this.#dropHead();
    if (this.#head === this.#messages.length) {
      // Nothing left: the next append starts over from its own offset.
      this.#messages = [];
      this.#appendedAtMs = [];
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
