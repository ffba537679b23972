import type { BrokerStore } from '../../store/broker-store.js';
import type { StoredMessage } from '../../store/records.js';

/**
 * Per topic, its last stored offset when this process started. Stored positions (group cursors,
 * broadcast instance positions) are written behind and may lag up to it after a crash: only a
 * message at or below the horizon can have been taken by a past life of the broker, so only those
 * cost a look at the delivery history; messages stored since cost nothing.
 */
export class RestartHorizon {
  readonly #lastOffsetAtStart = new Map<string, number>();

  constructor(store: BrokerStore) {
    for (const { name } of store.listTopics()) {
      const lastOffset = store.lastOffset(name);
      if (lastOffset !== undefined) this.#lastOffsetAtStart.set(name, lastOffset);
    }
  }

  /** Whether `message` (a topic and an offset) was stored before this process started. */
  covers(message: Pick<StoredMessage, 'topic' | 'offset'>): boolean {
    const horizon = this.#lastOffsetAtStart.get(message.topic);
    return horizon !== undefined && message.offset <= horizon;
  }
}
