import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assignQueues, queuesAssignedTo, rankQueues } from './queue-assignment.js';

/** Broker ids as brokers name themselves: host name and data directory. */
const hosts = (count: number) =>
  Array.from({ length: count }, (_, i) => `host-${String.fromCharCode(97 + i)}:/var/lib/ricochet`);

/** How many queues each broker of `brokerIds` is assigned. */
function spread(queueCount: number, brokerIds: readonly string[]): number[] {
  const assigned = assignQueues(queueCount, brokerIds);
  return brokerIds.map((id) => assigned.filter((owner) => owner === id).length);
}

/** The queues whose broker differs between two assignments. */
function moved(before: readonly (string | undefined)[], after: readonly (string | undefined)[]): number[] {
  return before.flatMap((owner, queue) => (after[queue] === owner ? [] : [queue]));
}

/** Sets of 1 to 8 distinct broker ids, any string (empty, non-ASCII) included. */
const brokerIdSets = fc.uniqueArray(fc.string({ unit: 'grapheme', maxLength: 40 }), {
  minLength: 1,
  maxLength: 8,
});
const queueCounts = fc.integer({ min: 1, max: 64 });

describe('queue assignment by rendezvous hashing', () => {
  it('gives the same answer for the same brokers, in any order and with repeats', () => {
    const ids = hosts(5);
    const assigned = assignQueues(64, ids);
    expect(assignQueues(64, [...ids].reverse())).toEqual(assigned);
    expect(assignQueues(64, [ids[3] ?? '', ...ids, ids[0] ?? ''])).toEqual(assigned);
    const shuffledSets = brokerIdSets.chain((brokerIds) =>
      fc.tuple(fc.constant(brokerIds), fc.shuffledSubarray(brokerIds, { minLength: brokerIds.length })),
    );
    fc.assert(
      fc.property(shuffledSets, queueCounts, ([brokerIds, shuffled], queueCount) => {
        expect(assignQueues(queueCount, shuffled)).toEqual(assignQueues(queueCount, brokerIds));
      }),
    );
  });

  it('keeps to the same hash from release to release: a cluster of mixed releases must agree', () => {
    // Changing the score moves every queue of a running cluster: this pins it.
    const [a, b, c] = hosts(3);
    expect(assignQueues(8, hosts(3))).toEqual([b, b, c, a, a, c, c, a]);
  });

  it('assigns every queue to a live broker, and none without brokers', () => {
    fc.assert(
      fc.property(brokerIdSets, queueCounts, (brokerIds, queueCount) => {
        const assigned = assignQueues(queueCount, brokerIds);
        expect(assigned).toHaveLength(queueCount);
        for (const owner of assigned) expect(brokerIds).toContain(owner);
      }),
    );
    expect(assignQueues(4, [])).toEqual([undefined, undefined, undefined, undefined]);
    expect(assignQueues(0, hosts(2))).toEqual([]);
  });

  it('lists the queues of one broker, which together with the others cover every queue once', () => {
    const ids = hosts(3);
    const lists = ids.map((id) => queuesAssignedTo(id, 8, ids));
    expect(lists.flat().sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    for (const list of lists) expect(list).toEqual([...list].sort((x, y) => x - y));
    expect(queuesAssignedTo('not-live', 8, ids)).toEqual([]);
  });

  it('moves only the queues of a broker that leaves, each to a broker that stays', () => {
    fc.assert(
      fc.property(
        brokerIdSets.filter((ids) => ids.length >= 2),
        queueCounts,
        fc.nat(),
        (brokerIds, queueCount, pick) => {
          const leaving = brokerIds[pick % brokerIds.length];
          const staying = brokerIds.filter((id) => id !== leaving);
          const before = assignQueues(queueCount, brokerIds);
          const after = assignQueues(queueCount, staying);
          for (const queue of moved(before, after)) expect(before[queue]).toBe(leaving);
          for (const owner of after) expect(owner).not.toBe(leaving);
        },
      ),
    );
  });

  it('moves queues only to a broker that joins', () => {
    fc.assert(
      fc.property(
        brokerIdSets,
        queueCounts,
        fc.string({ maxLength: 40 }),
        (brokerIds, queueCount, joining) => {
          fc.pre(!brokerIds.includes(joining));
          const before = assignQueues(queueCount, brokerIds);
          const after = assignQueues(queueCount, [...brokerIds, joining]);
          for (const queue of moved(before, after)) expect(after[queue]).toBe(joining);
        },
      ),
    );
  });

  it('spreads queues evenly enough over brokers named as brokers name themselves', () => {
    // 8 queues over 3 brokers: 3, 3 and 2, the best there is.
    expect(spread(8, hosts(3)).sort()).toEqual([2, 3, 3]);
    // 64 over 5: 12.8 each on average; no broker is given more than a quarter above it.
    const five = spread(64, hosts(5));
    expect(five.reduce((sum, count) => sum + count, 0)).toBe(64);
    expect(Math.max(...five)).toBeLessThanOrEqual(16);
    expect(Math.min(...five)).toBeGreaterThanOrEqual(9);
  });

  it('refuses a queue count that is not a non-negative integer', () => {
    for (const count of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => assignQueues(count, hosts(2))).toThrow(RangeError);
    }
  });

  it("ranks each queue's brokers so that the one after its owner is who owns it once the owner goes", () => {
    fc.assert(
      fc.property(
        brokerIdSets,
        queueCounts,
        fc.integer({ min: 1, max: 4 }),
        (brokerIds, queueCount, depth) => {
          const ranked = rankQueues(queueCount, brokerIds, depth);
          const owners = assignQueues(queueCount, brokerIds);
          for (const [queue, brokers] of ranked.entries()) {
            expect(brokers).toHaveLength(Math.min(depth, brokerIds.length));
            expect(new Set(brokers).size).toBe(brokers.length);
            expect(brokers[0]).toBe(owners[queue]);
            // The standby a warm copy is kept for is the broker the queue moves to.
            const [owner, next] = brokers;
            if (next !== undefined) {
              const without = brokerIds.filter((id) => id !== owner);
              expect(assignQueues(queueCount, without)[queue]).toBe(next);
            }
          }
        },
      ),
    );
    expect(rankQueues(2, [], 2)).toEqual([[], []]);
  });
});
