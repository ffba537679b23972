import { describe, expect, it, vi } from 'vitest';
import type { BrokerStore } from '../../store/broker-store.js';
import type { LeaseGate } from '../../store/postgres/store-lease.js';
import type { RemoteQueueParts } from '../routing/partition-router.js';
import type { ClusterQueue, ClusterView } from './cluster-view.js';
import { rankQueues } from './queue-assignment.js';
import { QueueOwnership } from './queue-ownership.js';

/**
 * Which queues a broker keeps a copy of (`queue-ownership.ts`): those it owns and those it stands
 * by for, as each reading of the cluster says, and no other. The stores, the sessions to owners
 * and the cluster are stand-ins; the clustered brokers are cluster/spread.test.ts's.
 */

const QUEUES = 8;
const POLL_MS = 5;
const A = 'broker-a';
const B = 'broker-b';
const C = 'broker-c';

/** A queue's store being opened by {@link Cluster}: it takes the lease once the gate opens and no one holds it. */
interface Opening {
  readonly queue: number;
  readonly signal: AbortSignal;
}

/**
 * The cluster as one broker (`me`) sees it: the live brokers, ranked per queue as the registry
 * would rank them, and each lease held by the broker whose store took it. Stores open at once
 * (the copy is warm) and take their queue's lease when their gate is open and the lease is free.
 */
class Cluster {
  live: string[];
  readonly owners = new Map<number, string>();
  readonly openings = new Set<Opening>();
  readonly closedStores: number[] = [];
  readonly ownership: QueueOwnership;
  readonly #routed = new Map<number, BrokerStore | RemoteQueueParts | undefined>();

  constructor(
    readonly me: string,
    live: string[],
    readonly standbys: number,
  ) {
    this.live = live;
    this.ownership = new QueueOwnership({
      me,
      queues: QUEUES,
      readView: async () => this.view(),
      openQueue: (queue, gate, signal) => this.#open(queue, gate, signal),
      connect: async () => ({ messaging: { close: async () => {} } }) as unknown as RemoteQueueParts,
      // As the router does: what a queue was routed to is closed when it is routed elsewhere.
      replaceQueue: async (queue, parts) => {
        const before = this.#routed.get(queue);
        this.#routed.set(queue, parts);
        if (before && 'close' in before) await before.close();
      },
      pollMs: POLL_MS,
      onError: (error) => {
        throw error;
      },
    });
  }

  view(): ClusterView {
    const ranked = rankQueues(QUEUES, this.live, 1 + this.standbys);
    const queues = ranked.map(
      ([assignedTo, ...standbys], queue): ClusterQueue => ({
        queue,
        owner: this.owners.get(queue),
        epoch: 1,
        expiresInMs: 1_000,
        assignedTo,
        standbys,
      }),
    );
    return { brokers: [], queues };
  }

  /** The queues `me` keeps a copy of (being opened, or owned), in order. */
  copies(): number[] {
    const opening = [...this.openings].filter((open) => !open.signal.aborted).map((open) => open.queue);
    const owned = [...this.owners].flatMap(([queue, owner]) => (owner === this.me ? [queue] : []));
    return [...new Set([...opening, ...owned])].sort((a, b) => a - b);
  }

  /** The queues rendezvous hashing gives `me` to own or stand by for. */
  expected(): number[] {
    return rankQueues(QUEUES, this.live, 1 + this.standbys).flatMap((ranked, queue) =>
      ranked.includes(this.me) ? [queue] : [],
    );
  }

  #open(queue: number, gate: LeaseGate, signal: AbortSignal): Promise<BrokerStore> {
    const opening = { queue, signal };
    this.openings.add(opening);
    return new Promise<BrokerStore>((resolve, reject) => {
      signal.addEventListener('abort', () => {
        this.openings.delete(opening);
        reject(new Error('aborted'));
      });
      const take = () => {
        if (signal.aborted) return;
        if (!gate.isOpen || (this.owners.get(queue) ?? this.me) !== this.me) {
          setTimeout(take, POLL_MS);
          return;
        }
        this.owners.set(queue, this.me);
        this.openings.delete(opening);
        resolve({
          close: async () => {
            this.closedStores.push(queue);
            if (this.owners.get(queue) === this.me) this.owners.delete(queue);
          },
        } as unknown as BrokerStore);
      };
      void gate.opened.then(take);
    });
  }
}

async function started(cluster: Cluster): Promise<Cluster> {
  cluster.ownership.start();
  await vi.waitFor(() => expect(cluster.copies()).toEqual(cluster.expected()), {
    timeout: 5_000,
    interval: 5,
  });
  return cluster;
}

describe('the queues a broker keeps a copy of', () => {
  it('are those it owns and those it stands by for, and no more', async () => {
    const cluster = await started(new Cluster(A, [A, B, C], 1));
    const [owned, standby] = [rankQueues(QUEUES, [A, B, C], 1), rankQueues(QUEUES, [A, B, C], 2)];
    // Of three brokers with one standby each, a broker copies about two thirds of the queues.
    expect(cluster.copies().length).toBeLessThan(QUEUES);
    expect(cluster.copies()).toEqual(standby.flatMap((ranked, queue) => (ranked.includes(A) ? [queue] : [])));
    await vi.waitFor(() =>
      expect([...cluster.owners.keys()].sort()).toEqual(
        owned.flatMap(([owner], queue) => (owner === A ? [queue] : [])),
      ),
    );
    await cluster.ownership.stop();
  });

  it('with no standby, are only those it owns', async () => {
    const cluster = await started(new Cluster(A, [A, B, C], 0));
    expect(cluster.copies()).toEqual(
      rankQueues(QUEUES, [A, B, C], 1).flatMap(([owner], queue) => (owner === A ? [queue] : [])),
    );
    await cluster.ownership.stop();
  });

  it('follow the brokers as they come and go: a copy is dropped when its queue moves away, made when one moves here', async () => {
    // Alone, a broker owns every queue.
    const cluster = await started(new Cluster(A, [A], 1));
    expect(cluster.copies()).toHaveLength(QUEUES);

    // Two more join: queues assigned to them are handed over (closed here), and of those, the
    // ones A does not stand by for leave no copy behind.
    cluster.live = [A, B, C];
    await vi.waitFor(() => expect(cluster.copies()).toEqual(cluster.expected()), {
      timeout: 5_000,
      interval: 5,
    });
    const handedOver = rankQueues(QUEUES, [A, B, C], 1).flatMap(([owner], queue) =>
      owner === A ? [] : [queue],
    );
    expect([...cluster.closedStores].sort()).toEqual(handedOver);
    // The joiners take what they were assigned once A gave it back.
    for (const queue of handedOver)
      cluster.owners.set(queue, rankQueues(QUEUES, [A, B, C], 1)[queue]?.[0] ?? '');

    // B goes: A takes the queues B owned that it stood by for (warm), and copies those it now stands by for.
    cluster.live = [A, C];
    for (const [queue, owner] of cluster.owners) if (owner === B) cluster.owners.delete(queue);
    await vi.waitFor(
      () => {
        expect(cluster.copies()).toEqual(cluster.expected());
        const ownedByA = [...cluster.owners].flatMap(([queue, owner]) => (owner === A ? [queue] : []));
        expect(ownedByA.sort()).toEqual(
          rankQueues(QUEUES, [A, C], 1).flatMap(([owner], queue) => (owner === A ? [queue] : [])),
        );
      },
      { timeout: 5_000, interval: 5 },
    );
    await cluster.ownership.stop();
  });
});
