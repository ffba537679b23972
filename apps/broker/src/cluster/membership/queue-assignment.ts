import { fmix32 } from '../../engine/index.js';

/**
 * Which live broker each queue of a split store (`--store-queues`) belongs to, by rendezvous
 * (highest-random-weight) hashing: every broker scores every queue, and the highest score wins.
 * Every broker that knows the same set of live brokers computes the same answer, with no
 * coordination; and when a broker comes or goes, only the queues it wins or held move, which is
 * what makes a takeover cheap (DESIGN.md §9).
 *
 * Pure: the caller brings the live brokers (`cluster/membership/broker-registry.ts`). The hash is part
 * of the cluster's protocol: every broker of a cluster, and every release, must score alike, or two
 * brokers would each think a queue theirs.
 */

const encoder = new TextEncoder();

/**
 * The broker `queueCount`'s queues are each assigned to (index = queue), `undefined` for every
 * queue when there is no broker. The answer depends on the set of ids only: neither their order
 * nor repeats change it.
 * @throws RangeError unless `queueCount` is a non-negative integer.
 */
export function assignQueues(queueCount: number, brokerIds: readonly string[]): (string | undefined)[] {
  return rankQueues(queueCount, brokerIds, 1).map((ranked) => ranked[0]);
}

/**
 * For each of `queueCount`'s queues (index = queue), its first `depth` brokers by score, highest
 * first: the owner ({@link assignQueues}), then who would own it if the brokers before were gone.
 * That order is what makes a standby useful: when an owner goes, its queue moves to the broker
 * ranked next, and to no other. Fewer than `depth` when fewer brokers are live.
 * @throws RangeError unless `queueCount` is a non-negative integer.
 */
export function rankQueues(queueCount: number, brokerIds: readonly string[], depth: number): string[][] {
  checkQueueCount(queueCount);
  const brokers = [...new Set(brokerIds)].map((brokerId) => ({ brokerId, seed: idHash(brokerId) }));
  return Array.from({ length: queueCount }, (_, queue) =>
    brokers
      .map(({ brokerId, seed }) => ({ brokerId, score: queueScore(seed, queue) }))
      // Ties (rare, but possible in 32 bits) go to the smaller id, so no order of the list wins them.
      .sort((a, b) => b.score - a.score || (a.brokerId < b.brokerId ? -1 : 1))
      .slice(0, depth)
      .map(({ brokerId }) => brokerId),
  );
}

/** The queues assigned to `brokerId` when `brokerIds` are live, in ascending order. */
export function queuesAssignedTo(
  brokerId: string,
  queueCount: number,
  brokerIds: readonly string[],
): number[] {
  return assignQueues(queueCount, brokerIds).flatMap((owner, queue) => (owner === brokerId ? [queue] : []));
}

/**
 * The score of (broker, queue): FNV-1a over the UTF-8 of the broker id and then the queue's four
 * bytes (little-endian, a fixed width so that no id and queue can spell another pair), mixed by
 * murmur3's 32-bit finaliser. FNV-1a alone changes only its low bits for the last byte, so the
 * queues of one broker would score nearly alike; the finaliser spreads every input bit over the
 * whole score. Unsigned, 0 to 2³²−1.
 */
function queueScore(seed: number, queue: number): number {
  let hash = seed;
  for (let shift = 0; shift < 32; shift += 8) {
    hash = fnv1aByte(hash, (queue >>> shift) & 0xff);
  }
  return fmix32(hash);
}

/** FNV-1a's state after the UTF-8 bytes of `brokerId`: the seed of its {@link queueScore}s. */
function idHash(brokerId: string): number {
  let hash = 0x811c9dc5;
  for (const byte of encoder.encode(brokerId)) hash = fnv1aByte(hash, byte);
  return hash;
}

function fnv1aByte(hash: number, byte: number): number {
  return Math.imul(hash ^ byte, 0x01000193) >>> 0;
}

function checkQueueCount(queueCount: number): void {
  if (!Number.isSafeInteger(queueCount) || queueCount < 0) {
    throw new RangeError(`a queue count is a non-negative integer, not ${queueCount}`);
  }
}
