/**
 * Where a message of a store split into queues is stored, as brokers and clients that route to
 * queue owners both compute it (docs/protocol/README.md#queue-map). The rule is part of the stored
 * layout: every broker of a cluster, every release and every client must pick the same queue for
 * the same key, or a message group would be split across queues and a resend (R3) would miss the
 * queue that holds its first copy.
 */

/**
 * The name of the one placement rule there is, as a `queueMap` frame names it: 32-bit FNV-1a of
 * the message group, or of the message id without one, modulo the queue count. A client that meets
 * a rule it does not know sends every message to its own broker, which forwards it.
 */
export const PLACEMENT_RULE = 'fnv1a-group-or-id';

/**
 * The feature a client names in `hello.features` to be told the queue map (`queueMap` frames), and
 * that a broker names in `welcome.features` when it will tell it.
 */
export const QUEUE_MAP_FEATURE = 'queueMap';

/**
 * The feature a client names in `hello.features` to subscribe with `scope: 'owned'` (deliveries
 * from the queues the session's broker owns only, following ownership as queues move), and that a
 * broker whose queues are spread over brokers names in `welcome.features` when it accepts that
 * scope. A push consumer granted it subscribes on every owner the queue map names, and no broker
 * forwards its deliveries. @see docs/protocol/README.md#owned-subscriptions
 */
export const OWNED_SUBSCRIPTIONS_FEATURE = 'ownedSubscriptions';

/**
 * The feature a client names in `hello.features` to receive with `scope: 'owned'` (leases from the
 * queues the session's broker owns only), and that a broker whose queues are spread over brokers
 * names in `welcome.features` when it accepts that scope. A simple consumer granted it receives from
 * every owner the queue map names, and no broker forwards its leases.
 * @see docs/protocol/README.md#owned-receives
 */
export const OWNED_RECEIVES_FEATURE = 'ownedReceives';

/**
 * The feature a client names in `hello.features`, beside {@link OWNED_SUBSCRIPTIONS_FEATURE}, to
 * lend its credit to its owned-scope subscriptions as a forwarding broker lends a client's credit
 * to other brokers' queues; a broker that grants `ownedSubscriptions` grants it too when asked.
 * Such a subscription asks its client for credit when messages are Ready for it and it has none
 * (`creditWanted`), and gives back what it cannot spend (`creditReturned`), so one client's credit
 * goes where the work is, retries first (P3). A client without it splits its credit over the
 * owners itself. @see docs/protocol/README.md#credit-lending
 */
export const CREDIT_LENDING_FEATURE = 'creditLending';

/**
 * The queue a message is stored in, when a store is split into `queues`: a hash of its message
 * group when it has one, so that every message of a FIFO group is in one queue, in order (P5);
 * else of its id, so that a send retried with the same id reaches the queue that may hold it, and
 * is answered with the original receipt (R3).
 */
export function queueOfMessage(
  message: { readonly messageId: string; readonly messageGroup?: string | undefined },
  queues: number,
): number {
  if (queues === 1) return 0;
  return fnv1a(message.messageGroup ?? message.messageId) % queues;
}

/** 32-bit FNV-1a over the string's UTF-16 code units: cheap, stable, and well spread for short keys. */
function fnv1a(key: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
