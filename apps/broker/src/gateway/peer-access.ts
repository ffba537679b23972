import { createHash, timingSafeEqual } from 'node:crypto';
import type { BrokerService } from '../engine/index.js';

/**
 * Sessions between brokers (`hello.queue`, DESIGN.md §9): a broker that does not own a queue
 * forwards its clients' requests for it to the broker that does, over the client protocol, on a
 * session scoped to that queue. Such a session is trusted with everything (the forwarding broker
 * checked its client's permissions), so it needs the cluster's peer token, which only brokers with
 * the database's credentials can read.
 */
export interface PeerAccess {
  /** The cluster's peer token: every broker of one database reads the same one. */
  readonly token: string;
  /** The service of one queue of this broker's store while this broker owns it, else `undefined`. */
  queueService(queue: number): BrokerService | undefined;
  /** The open sessions between brokers, by queue: closed when their queue changes hands. */
  readonly sessions?: PeerSessions;
}

/**
 * The sessions between brokers of each queue. A session is bound to the engine its queue had when
 * it opened; when this broker gives the queue up, its sessions are closed (`1013`, try again
 * later), so the forwarding brokers find the queue's new owner instead of an engine that closed.
 */
export class PeerSessions {
  readonly #byQueue = new Map<number, Set<() => void>>();

  /** Close `close`'s session when `queue` changes hands; the returned function forgets it. */
  track(queue: number, close: () => void): () => void {
    let sessions = this.#byQueue.get(queue);
    if (!sessions) {
      sessions = new Set();
      this.#byQueue.set(queue, sessions);
    }
    sessions.add(close);
    return () => {
      sessions.delete(close);
    };
  }

  /** `queue` changed hands: close its sessions. */
  closeQueue(queue: number): void {
    const sessions = this.#byQueue.get(queue);
    if (!sessions) return;
    this.#byQueue.delete(queue);
    for (const close of sessions) close();
  }
}

/** Whether `given` is the peer token, in a time that does not tell how much of it matched. */
export function isPeerToken(access: PeerAccess, given: string | undefined): boolean {
  if (given === undefined) return false;
  return timingSafeEqual(digest(access.token), digest(given));
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
