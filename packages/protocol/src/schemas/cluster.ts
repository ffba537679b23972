import { z } from 'zod';

/*
 * `GET /v1/cluster`'s answer (DESIGN.md §9; docs/guides/scale-out.md), apart from the rest of the
 * admin API's (`admin.ts`, whose table of answers names it): the live brokers of a PostgreSQL
 * store, its queues' owners, and with queues spread, the answering broker's routes and own view.
 */

/**
 * A live broker of a PostgreSQL store, with the queues assigned to it, those it stands by for
 * (keeps a warm copy of) and those whose lease it holds.
 */
export const clusterBrokerViewSchema = z.object({
  brokerId: z.string(),
  /** Where it serves clients (its `--advertise-url`); absent if it did not say. */
  advertiseUrl: z.string().optional(),
  advertiseTcpUrl: z.string().optional(),
  /** Its `--store-queues`. */
  storeQueues: z.number(),
  /** How long its row lives without another heartbeat, on the database's clock. */
  expiresInMs: z.number(),
  assignedQueues: z.array(z.number()).readonly(),
  /** With queues spread (`--store-standbys`); absent from brokers older than the field. */
  standbyQueues: z.array(z.number()).readonly().optional(),
  ownedQueues: z.array(z.number()).readonly(),
});

/** A live broker, as `GET /v1/cluster` lists it. */
export type ClusterBrokerView = z.infer<typeof clusterBrokerViewSchema>;

/** A queue of the store: who holds its lease now (no `owner` while no lease is live), and who it is assigned to. */
export const clusterQueueViewSchema = z.object({
  queue: z.number(),
  owner: z.string().optional(),
  /** The lease's epoch, one more at each take of the lease; 0 before any. */
  epoch: z.number(),
  /** How long the lease lasts without renewal; 0 without an owner. */
  expiresInMs: z.number(),
  assignedTo: z.string().optional(),
  /**
   * With queues spread: the brokers besides its owner that keep a warm copy of it, in the order they
   * would take it over (empty active/standby, where every broker but the owner stands by for every
   * queue); absent from brokers older than the field.
   */
  standbys: z.array(z.string()).readonly().optional(),
});

/** A queue of the store, as `GET /v1/cluster` lists it. */
export type ClusterQueueView = z.infer<typeof clusterQueueViewSchema>;

/** Where the answering broker routes a queue: to its own engine, to an owner elsewhere, or nowhere for now. */
export const queueRouteViewSchema = z.discriminatedUnion('to', [
  z.object({ queue: z.number(), assigned: z.boolean(), to: z.literal('here') }),
  z.object({
    queue: z.number(),
    assigned: z.boolean(),
    to: z.literal('elsewhere'),
    url: z.string(),
    /** The owner's id in the registry (a broker that predates it leaves it out). */
    owner: z.string().optional(),
  }),
  z.object({ queue: z.number(), assigned: z.boolean(), to: z.literal('nowhere') }),
]);

/** A queue's route, as `GET /v1/cluster` lists it with queues spread. */
export type QueueRouteView = z.infer<typeof queueRouteViewSchema>;

/**
 * What the answering broker sees itself, apart from the database's view: when it last read the
 * cluster from the database, and which peers answer its probes. With queues spread only.
 */
export const clusterSelfViewSchema = z.object({
  brokerId: z.string(),
  database: z.object({
    /** A read of the cluster got through within the lease TTL. */
    reachable: z.boolean(),
    /** How long ago the last read got through (absent: never); while unreachable, the age of `brokers` and `queues`. */
    lastContactAgoMs: z.number().optional(),
    /** Why the last read failed, while unreachable. */
    lastError: z.string().optional(),
  }),
  peers: z
    .array(
      z.object({
        brokerId: z.string(),
        url: z.string(),
        /** It answered a probe (`GET /healthz`) within the lease TTL. */
        reachable: z.boolean(),
        /** How long ago it last answered (absent: never). */
        lastSeenAgoMs: z.number().optional(),
      }),
    )
    .readonly(),
});

/** The answering broker's own view, as `GET /v1/cluster` shows it with queues spread. */
export type ClusterSelfView = z.infer<typeof clusterSelfViewSchema>;

/**
 * `GET /v1/cluster`: served by brokers on a PostgreSQL store only; `routes` and `self` with queues
 * spread. A spread broker that cannot reach the database answers with the last view it read, and
 * `self.database.reachable` false.
 */
export const clusterViewSchema = z.object({
  brokers: z.array(clusterBrokerViewSchema).readonly(),
  queues: z.array(clusterQueueViewSchema).readonly(),
  routes: z.array(queueRouteViewSchema).readonly().optional(),
  self: clusterSelfViewSchema.optional(),
});

/** The answer of `GET /v1/cluster`. */
export type ClusterView = z.infer<typeof clusterViewSchema>;
