import type { StoredMessage } from '../../store/records.js';

/**
 * Per topic, its last stored offset when this process started. Stored positions (group cursors,
 * broadcast instance positions) are written behind and may lag up to it after a crash: only a
 * message at or below the horizon can have been taken by a past life of the broker, so only those
 * cost a look at the delivery history; messages stored since cost nothing.
 *
 * Filled by `TopicRegistry.load`, which reads each topic's last offset anyway: one walk over the
 * stored topics at start, where each user of the horizon (delivery records, the broadcast ledger)
 * once made its own — three list reads and three `lastOffset` reads per topic, seconds with a
 * hundred thousand topics.
 */
export class RestartHorizon {
  readonly #lastOffsetAtStart = new Map<string, number>();

  /** `topic`'s last stored offset at start, as the registry loaded it. */
  set(topic: string, lastOffset: number): void {
    this.#lastOffsetAtStart.set(topic, lastOffset);
  }

  /** Whether `message` (a topic and an offset) was stored before this process started. */
  covers(message: Pick<StoredMessage, 'topic' | 'offset'>): boolean {
    const horizon = this.#lastOffsetAtStart.get(message.topic);
    return horizon !== undefined && message.offset <= horizon;
  }
}
