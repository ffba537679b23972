import type { BrokerStore } from '../store/broker-store.js';
import type { StoredMessage } from '../store/records.js';

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit for sends: at most one commit of new messages is being flushed at a time, and
 * every message accepted meanwhile waits to go into the next one together. Under load a flush
 * then carries everything that arrived during the previous one — one fsync for many send frames
 * instead of one each, queued behind each other — so throughput grows with load while every send
 * is still answered only after its own commit reached disk (R1).
 */
export class GroupCommit {
  readonly #store: BrokerStore;
  #queued: StoredMessage[] = [];
  #waiters: Waiter[] = [];
  #flushing = false;

  constructor(store: BrokerStore) {
    this.#store = store;
  }

  /** Store the messages; resolves once they are durable, rejects if their commit failed. */
  append(messages: readonly StoredMessage[]): Promise<void> {
    if (messages.length === 0) return Promise.resolve();
    const done = new Promise<void>((resolve, reject) => this.#waiters.push({ resolve, reject }));
    for (const message of messages) this.#queued.push(message);
    if (!this.#flushing) void this.#flush();
    return done;
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    // Each round takes everything queued so far; it ends when a flush finds nothing new queued.
    while (this.#queued.length > 0) {
      const messages = this.#queued;
      const waiters = this.#waiters;
      this.#queued = [];
      this.#waiters = [];
      // Written in one synchronous run, so the store commits them in one transaction.
      for (const message of messages) {
        void this.#store.appendMessage(message);
        void this.#store.putMessageLocation(message.messageId, {
          topic: message.topic,
          offset: message.offset,
          storedAt: message.storedAt,
        });
      }
      // The batch is answered when its flush is done; the next batch only waits for this one's
      // commit, so one transaction is being committed while the previous one is being flushed.
      const committed = this.#store.committed();
      this.#store.durable().then(
        () => {
          for (const waiter of waiters) waiter.resolve();
        },
        (error: unknown) => {
          for (const waiter of waiters) waiter.reject(error);
        },
      );
      await committed.catch(() => {});
    }
    this.#flushing = false;
  }
}
