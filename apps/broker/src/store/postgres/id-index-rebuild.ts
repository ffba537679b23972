import type { BrokerStore } from '../broker-store.js';
import type { MessageLocation, StoredMessage } from '../records.js';

/**
 * The message-id index of the local copy, rebuilt from the message rows while the store loads
 * (PostgreSQL keeps no index table: `postgres-tables.ts`). It holds every message a send stored,
 * so not a DLQ copy, which keeps its original's id. An id stored again after the dedup window
 * names the newer message, as the send that stored it last put it: within a topic the later
 * offset (the rows come in key order), across topics the later `storedAt`.
 *
 * What it put is not readable from the copy until the copy commits it, so it keeps what it put
 * here until {@link committed}; past {@link IdIndexRebuild.HOLD} entries, {@link full} asks the
 * load to wait for a commit.
 */
export class IdIndexRebuild {
  /** Entries held before the load waits for a commit: about 15 MB. */
  static readonly HOLD = 100_000;
  readonly #mirror: BrokerStore;
  readonly #uncommitted = new Map<string, MessageLocation>();

  constructor(mirror: BrokerStore) {
    this.#mirror = mirror;
  }

  /** Index `message`, loaded after every message of a lower (topic, offset). */
  add(message: StoredMessage): void {
    if (message.deadLetter !== undefined) return;
    const { messageId } = message;
    const known = this.#uncommitted.get(messageId) ?? this.#mirror.locateMessage(messageId);
    if (known !== undefined && known.topic !== message.topic && known.storedAt > message.storedAt) return;
    const location = { topic: message.topic, offset: message.offset, storedAt: message.storedAt };
    this.#uncommitted.set(messageId, location);
    void this.#mirror.putMessageLocation(messageId, location);
  }

  /** True once it holds {@link IdIndexRebuild.HOLD} entries: wait for a commit, then {@link committed}. */
  get full(): boolean {
    return this.#uncommitted.size >= IdIndexRebuild.HOLD;
  }

  /** The copy committed everything put so far: read it from there. */
  committed(): void {
    this.#uncommitted.clear();
  }
}
