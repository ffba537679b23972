import { hostname } from 'node:os';
import type { BrokerStore } from '../store/broker-store.js';
import type { LeaseGate } from '../store/postgres/store-lease.js';
import type { BrokerRegistry } from './membership/broker-registry.js';
import type { ClusterHealth } from './membership/cluster-health.js';
import { type ClusterView, readClusterView } from './membership/cluster-view.js';
import { QueueOwnership, type QueueRoute } from './membership/queue-ownership.js';
import { queueAdminOf } from './peers/peer-admin.js';
import { PeerConnection } from './peers/peer-connection.js';
import { RemoteAdmin } from './peers/remote-admin.js';
import { type ForwardedRequest, RemoteQueue } from './peers/remote-queue.js';
import type { PartitionRouter } from './routing/partition-router.js';

/** What {@link spreadQueues} needs from the broker it runs in. */
export interface SpreadQueuesOptions {
  /** This broker's id in the registry and in lease rows (`brokerIdentity`). */
  readonly me: string;
  readonly queues: number;
  /** How many brokers besides its owner keep a warm copy of each queue (`--store-standbys`). */
  readonly standbys: number;
  readonly router: PartitionRouter;
  readonly registry: BrokerRegistry;
  /** The cluster's peer token (`cluster/membership/peer-token.ts`). */
  readonly peerToken: string;
  readonly maxFrameBytes: number;
  /** How long a lease lasts without renewal: the cluster is read four times as often (at most every 250 ms). */
  readonly leaseTtlMs: number;
  /** Open a queue's store, waiting warm for its lease, taken only while `gate` is open (`openStoreQueue`). */
  readonly openQueue: (
    queue: number,
    gate: LeaseGate,
    signal: AbortSignal,
    onLost: (error: unknown) => void,
  ) => Promise<BrokerStore>;
  readonly onRoute: (route: QueueRoute) => void;
  readonly onHandover: (queue: number, direction: 'taken' | 'givenUp') => void;
  /** Told of every read of the cluster, and probing the peers it names (started here). */
  readonly health: ClusterHealth;
  /** Told of every read of the cluster too: the queue map takes the owners' endpoints from it. */
  readonly onView: (view: ClusterView) => void;
  /** Messages forwarded for clients to queues' owners, or from them (`cluster-metrics.ts`). */
  readonly onForwarded: (request: ForwardedRequest, messages: number) => void;
  readonly onError: (error: unknown, context: string) => void;
}

/**
 * Spread the queues of a split PostgreSQL store over the live brokers (DESIGN.md §9): each
 * broker owns the queues rendezvous hashing gives it and forwards the rest to their owners, over
 * sessions between brokers for messaging and admin calls alike. Started, it runs
 * until stopped; the router closes what it routes to.
 */
export function spreadQueues(options: SpreadQueuesOptions): QueueOwnership {
  const ownership = new QueueOwnership({
    me: options.me,
    queues: options.queues,
    readView: async () => {
      try {
        const view = await options.registry.read((sql) =>
          readClusterView(sql, options.queues, options.standbys),
        );
        options.health.viewRead(view);
        options.onView(view);
        return view;
      } catch (error) {
        options.health.readFailed(error);
        throw error;
      }
    },
    openQueue: options.openQueue,
    connect: async (queue, url, onClosed) => {
      const connection = await PeerConnection.open({
        url,
        token: options.peerToken,
        queue,
        // A name in the owner's logs; the registry's id may be longer than a clientId may be.
        clientId: `peer:${hostname()}`.slice(0, 128),
        maxFrameBytes: options.maxFrameBytes,
        onClose: onClosed,
      });
      return {
        messaging: new RemoteQueue(queue, connection, options.onForwarded),
        admin: queueAdminOf(connection, () => new RemoteAdmin({ url, token: options.peerToken, queue }).call),
      };
    },
    replaceQueue: (queue, parts) => options.router.replaceQueue(queue, parts),
    pollMs: Math.min(250, Math.max(10, Math.floor(options.leaseTtlMs / 4))),
    onRoute: options.onRoute,
    onHandover: options.onHandover,
    onError: options.onError,
  });
  ownership.start();
  options.health.start();
  return ownership;
}
