import type { Sql } from '../../store/postgres/driver.js';
import { QUEUE_COUNT, queueSchema } from '../../store/postgres/queue-schema.js';
import { type LiveBroker, liveBrokers } from './broker-registry.js';
import { presentTables, readSeenTables } from './present-tables.js';
import { rankQueues } from './queue-assignment.js';

/**
 * A live broker, with the queues rendezvous hashing assigns it, those it stands by for (keeping a
 * warm copy), and those whose lease it holds.
 */
export interface ClusterBroker extends LiveBroker {
  readonly assignedQueues: number[];
  readonly standbyQueues: number[];
  readonly ownedQueues: number[];
}

/** A queue of the store: who holds its lease now, and who rendezvous hashing assigns it to. */
export interface ClusterQueue {
  readonly queue: number;
  /** The holder of a lease that has not expired; `undefined` for none (given back, expired, or the queue not created yet). */
  readonly owner: string | undefined;
  /** The lease's epoch, expired or not: one more at each take of the lease; 0 before any. */
  readonly epoch: number;
  /** How long the lease lasts without renewal, on the database's clock; 0 without an owner. */
  readonly expiresInMs: number;
  /** The live broker the queue is assigned to; `undefined` while no broker is live. */
  readonly assignedTo: string | undefined;
  /**
   * The live brokers that keep a warm copy of the queue besides its owner, in the order they would
   * take it over (`--store-standbys` of them, fewer while fewer brokers are live).
   */
  readonly standbys: string[];
}

/** What `GET /v1/cluster` answers: the live brokers and the queues, side by side. */
export interface ClusterView {
  readonly brokers: ClusterBroker[];
  readonly queues: ClusterQueue[];
}

/** What a queue's lease row says, read by {@link readLeases}. */
interface LeaseRow {
  readonly queue: number;
  readonly owner: string;
  readonly epoch: string;
  readonly live: boolean;
  readonly expires_in_ms: number;
}

/**
 * Read the cluster as the database sees it, on `sql` (a connection in the default schema, such
 * as the broker registry's): the live brokers, and the lease row of each of `queueCount` queues.
 * Assignment and each queue's `standbyCount` standbys are computed
 * (`cluster/membership/queue-assignment.ts`) and shown beside ownership; until brokers take the
 * leases assigned to them, one broker owns every queue whatever it says.
 * @throws RangeError unless `queueCount` is 1 to {@link QUEUE_COUNT}.
 */
export async function readClusterView(
  sql: Sql,
  queueCount: number,
  standbyCount: number,
): Promise<ClusterView> {
  if (!Number.isInteger(queueCount) || queueCount < 1 || queueCount > QUEUE_COUNT) {
    throw new RangeError(`a store has 1 to ${QUEUE_COUNT} queues, not ${queueCount}`);
  }
  const brokers = await liveBrokers(sql);
  const leases = await readLeases(sql, queueCount);
  const ranked = rankQueues(
    queueCount,
    brokers.map((broker) => broker.brokerId),
    1 + standbyCount,
  );
  const queues = ranked.map(([assignedTo, ...standbys], queue): ClusterQueue => {
    const lease = leases.get(queue);
    const owned = lease?.live === true && lease.owner !== '';
    return {
      queue,
      owner: owned ? lease.owner : undefined,
      epoch: lease === undefined ? 0 : Number(lease.epoch),
      expiresInMs: owned ? Math.max(0, Math.round(Number(lease.expires_in_ms))) : 0,
      assignedTo,
      standbys,
    };
  });
  return {
    brokers: brokers.map((broker) => ({
      ...broker,
      assignedQueues: queues.flatMap((queue) => (queue.assignedTo === broker.brokerId ? [queue.queue] : [])),
      standbyQueues: queues.flatMap((queue) =>
        queue.standbys.includes(broker.brokerId) ? [queue.queue] : [],
      ),
      ownedQueues: queues.flatMap((queue) => (queue.owner === broker.brokerId ? [queue.queue] : [])),
    })),
    queues,
  };
}

/**
 * The lease row of every queue whose table exists, by queue: one query finds which exist (until
 * all have been seen: `present-tables.ts`), one reads them all. A queue's table is
 * `ricochet_lease` in its schema (`queue-schema.ts`), named here in full, since the connection's
 * search_path is the default schema's; a queue no broker opened yet has no schema, and no row here.
 */
async function readLeases(sql: Sql, queueCount: number): Promise<Map<number, LeaseRow>> {
  const tables = Array.from({ length: queueCount }, (_, queue) => {
    const schema = queueSchema(queue);
    return schema === undefined ? 'ricochet_lease' : `${schema}.ricochet_lease`;
  });
  const present = await presentTables(sql, tables);
  // The names are built from queue numbers above, never from input: safe to splice into the text.
  const selects = tables.flatMap((table, queue) =>
    present.has(table)
      ? [
          `select ${queue} as queue, owner, epoch, expires_at > clock.at as live,
                  extract(epoch from greatest(expires_at, clock.at) - clock.at) * 1000 as expires_in_ms
             from ${table}, clock where id = 1`,
        ]
      : [],
  );
  if (selects.length === 0) return new Map();
  const rows = await readSeenTables(sql, () =>
    sql.unsafe<LeaseRow[]>(`with clock as (select clock_timestamp() as at) ${selects.join(' union all ')}`),
  );
  return new Map(rows.map((row) => [row.queue, row]));
}
