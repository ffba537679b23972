import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { ClusterView, QueueRoute } from '@ricochet/broker';
import { expect } from 'vitest';
import { AdminApi } from './admin.js';
import { type ChildBroker, startChildBroker } from './child-broker.js';
import { eventually } from './push.js';
import { postgresDatabase } from './test-store.js';

/**
 * `ricochet-broker` processes (three, or as many as a test asks) on one PostgreSQL database with
 * its queues spread over them (`--store-spread`), and what the failover tests read of them: each broker's view of the
 * cluster, and when every queue is routed to its owner again.
 */
/** The brokers' store lease: short, so a hung owner loses its queues within a test. */
export const LEASE_MS = 1_000;
export const QUEUES = 4;
/** `GET /v1/cluster` of a broker whose queues are spread: the database's view and its own routes. */
export type SpreadClusterView = ClusterView & { readonly routes: readonly QueueRoute[] };

export const adminOf = (broker: ChildBroker) => new AdminApi(broker.endpoint.replace(/^ws/, 'http'));

/**
 * Messages forwarded for `request` (`ricochet_cluster_forwarded_messages_total`), summed over
 * `brokers`, each of which counts what it forwarded itself: what clients that route to the queue
 * owners are to keep still.
 */
export async function forwardedMessages(
  brokers: readonly ChildBroker[],
  request: 'send' | 'deliver',
): Promise<number> {
  let sum = 0;
  for (const broker of brokers) {
    const response = await fetch(`${broker.endpoint.replace(/^ws/, 'http')}/metrics`);
    const line = (await response.text())
      .split('\n')
      .find((l) => l.startsWith(`ricochet_cluster_forwarded_messages_total{request="${request}"} `));
    sum += line === undefined ? 0 : Number(line.split(' ').at(-1));
  }
  return sum;
}

/**
 * Three brokers on one fresh database, started together, their data directories added to
 * `directories` (for the caller to remove); none is left running if one fails to start, and all
 * are killed when the cluster is disposed.
 */
export async function startSpreadCluster(directories: string[]) {
  const store = await postgresDatabase(`spread_${randomBytes(6).toString('hex')}`);
  const { brokers, [Symbol.asyncDispose]: dispose } = await startSpreadBrokers(store, 3, directories);
  const [first, second, third] = brokers;
  if (first === undefined || second === undefined || third === undefined)
    throw new Error('startSpreadBrokers started fewer brokers than asked');
  return { store, brokers: [first, second, third] as const, [Symbol.asyncDispose]: dispose };
}

/**
 * `count` brokers spreading the queues of the database at `store`, started together as
 * {@link startSpreadCluster}'s are, with a store lease of `leaseMs`.
 */
export async function startSpreadBrokers(
  store: string,
  count: number,
  directories: string[],
  leaseMs = LEASE_MS,
) {
  const flags = ['--store-queues', `${QUEUES}`, '--store-spread', '--store-lease-ms', `${leaseMs}`];
  const starts = await Promise.allSettled(
    Array.from({ length: count }, () => {
      const dir = mkdtempSync(join(tmpdir(), 'ricochet-spread-'));
      directories.push(dir);
      return startChildBroker(dir, ['--store', store, ...flags]);
    }),
  );
  const brokers = starts.flatMap((start) => (start.status === 'fulfilled' ? [start.value] : []));
  if (brokers.length < count) {
    await Promise.all(brokers.map((broker) => broker.kill9()));
    throw starts.find((start) => start.status === 'rejected')?.reason;
  }
  return {
    brokers,
    /** Every broker killed (`kill -9`; one killed or stopped already is fine). */
    [Symbol.asyncDispose]: async () => void (await Promise.all(brokers.map((broker) => broker.kill9()))),
  };
}

/** A broker's view of the cluster, or `undefined` when it does not answer in time. */
export function readCluster(broker: ChildBroker): Promise<SpreadClusterView | undefined> {
  const url = `${broker.endpoint.replace(/^ws/, 'http')}/v1/cluster`;
  return fetch(url, { signal: AbortSignal.timeout(2_000) })
    .then((response) => (response.ok ? (response.json() as Promise<SpreadClusterView>) : undefined))
    .catch(() => undefined);
}

/**
 * Whether the broker at `endpoint` sees exactly the brokers at `liveEndpoints` live, every queue
 * owned by the one it is assigned to, and routes each there: to its own engine or to that owner's URL.
 */
function routesEveryQueueToItsOwner(
  view: SpreadClusterView | undefined,
  endpoint: string | undefined,
  liveEndpoints: readonly string[],
): boolean {
  if (view === undefined) return false;
  const urlOf = new Map(view.brokers.map((broker) => [broker.brokerId, broker.advertiseUrl]));
  const me = view.brokers.find((broker) => broker.advertiseUrl === endpoint)?.brokerId;
  const brokersLive =
    view.brokers.length === liveEndpoints.length &&
    view.brokers.every((broker) => liveEndpoints.includes(broker.advertiseUrl ?? ''));
  return (
    me !== undefined &&
    brokersLive &&
    view.routes.length === QUEUES &&
    view.routes.every((route) => {
      const queue = view.queues[route.queue];
      if (queue?.owner === undefined || queue.owner !== queue.assignedTo) return false;
      if (route.assigned !== (queue.assignedTo === me)) return false;
      if (route.to === 'here') return queue.owner === me;
      return route.to === 'elsewhere' && route.url === urlOf.get(queue.owner);
    })
  );
}

/**
 * Poll every broker of `live` until each routes every queue to its assigned owner among them (no
 * event announces it; the brokers read the cluster four times per lease). Resolves with the
 * elapsed milliseconds; rejects with the last views after `budgetMs`.
 */
export async function untilRoutedToLiveOwners(
  live: readonly ChildBroker[],
  budgetMs: number,
): Promise<number> {
  const startedAt = performance.now();
  const endpoints = live.map((broker) => broker.endpoint);
  let views: (SpreadClusterView | undefined)[] = [];
  while (performance.now() - startedAt < budgetMs) {
    views = await Promise.all(live.map(readCluster));
    const settled = views.every((view, index) =>
      routesEveryQueueToItsOwner(view, endpoints[index], endpoints),
    );
    if (settled) return performance.now() - startedAt;
    await delay(25);
  }
  throw new Error(`queues not routed to live owners within ${budgetMs} ms: ${JSON.stringify(views)}`);
}

/**
 * The broker that owns the fewest queues: at most one of the four, so most sends through it are
 * forwarded. The queues go to brokers by rendezvous hashing of random broker ids, so any one
 * broker owns all four in about one cluster of 81; a test that took the first broker as its entry
 * then saw nothing forwarded.
 */
export async function leastOwning(brokers: readonly ChildBroker[]): Promise<ChildBroker> {
  const view = await readCluster(brokers[0] as ChildBroker);
  const owned = (broker: ChildBroker) =>
    view?.brokers.find((b) => b.advertiseUrl === broker.endpoint)?.ownedQueues.length ?? QUEUES;
  const least = [...brokers].sort((a, b) => owned(a) - owned(b))[0];
  if (view === undefined || least === undefined || owned(least) >= QUEUES)
    throw new Error(`no broker owns fewer than ${QUEUES} queues: ${JSON.stringify(view)}`);
  return least;
}

/**
 * Roles for a failover: `target`, a broker that owns at least one queue (the one whose loss the
 * test provokes), and the two others, which serve the producer and the consumer.
 */
export async function pickRoles(brokers: readonly [ChildBroker, ChildBroker, ChildBroker]) {
  const view = await readCluster(brokers[0]);
  const owner = view?.brokers.find((broker) => broker.ownedQueues.length > 0);
  const target = brokers.find((broker) => broker.endpoint === owner?.advertiseUrl);
  const [producerBroker, consumerBroker] = brokers.filter((broker) => broker !== target);
  if (!owner || !target || !producerBroker || !consumerBroker)
    throw new Error(`no owner: ${JSON.stringify(view)}`);
  return { target, targetQueues: owner.ownedQueues, producerBroker, consumerBroker };
}

/**
 * Wait (up to 30 s, over `broker`'s admin API) until `group` has `committed` messages committed,
 * and check that that is all: none more, none in the DLQ, none in flight.
 */
export async function expectCommitted(broker: ChildBroker, group: string, committed: number): Promise<void> {
  const view = await eventually(
    () => adminOf(broker).getGroup(group),
    (found) => found.stats.committed >= committed,
    30_000,
  );
  expect(view.stats).toMatchObject({ committed, dlq: 0, inflight: 0 });
}
