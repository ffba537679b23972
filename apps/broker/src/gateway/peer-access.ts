import { createHash, timingSafeEqual } from 'node:crypto';
import type { BrokerService } from '../engine/broker-service.js';

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
}

/** Whether `given` is the peer token, in a time that does not tell how much of it matched. */
export function isPeerToken(access: PeerAccess, given: string | undefined): boolean {
  if (given === undefined) return false;
  return timingSafeEqual(digest(access.token), digest(given));
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
