import type { BrokerStore } from '../broker-store.js';
import type { MessageLocation, StoredMessage } from '../records.js';

/**
 * The message-id index of the local copy, rebuilt from the message rows while the store loads
 * (PostgreSQL keeps no index table: `postgres-tables.ts`). It holds every message a send stored,
 * so not a DLQ copy, which keeps its original's id. An id stored again after the dedup window
 * names the newer message, as the send that stored it last put it: within a topic the later
 * offset (the rows come in key order), across topics the later `storedAt`.
 *
 * What it put since the copy last committed is not readable from the copy yet, so it keeps that
 * here until {@link committed}.
 */
export class IdIndexRebuild {
  readonly #mirror: BrokerStore;
  readonly #sinceCommit = new Map<string, MessageLocation>();

  constructor(mirror: BrokerStore) {
    this.#mirror = mirror;
  }

  /** Index `message`, loaded after every message of a lower (topic, offset). */
  add(message: StoredMessage): void {
    if (message.deadLetter !== undefined) return;
    const { messageId } = message;
    const known = this.#sinceCommit.get(messageId) ?? this.#mirror.locateMessage(messageId);
    if (known !== undefined && known.topic !== message.topic && known.storedAt > message.storedAt) return;
    const location = { topic: message.topic, offset: message.offset, storedAt: message.storedAt };
    this.#sinceCommit.set(messageId, location);
    void this.#mirror.putMessageLocation(messageId, location);
  }

  /** The copy committed everything put so far: read it from there. */
  committed(): void {
    this.#sinceCommit.clear();
  }
}
