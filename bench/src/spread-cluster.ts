import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brokerIdentity, type QueueRoute, queuesSpread, rankQueues } from '@ricochet/broker';

/** Sets of data directories tried before {@link balancedDataDirs} settles for an uneven one. */
const BALANCE_ATTEMPTS = 2_000;

/**
 * The standbys each queue has in the bench's clusters: the broker's default (`--store-standbys`),
 * unless `RICOCHET_STORE_STANDBYS` (which the brokers inherit) says otherwise.
 */
function benchStandbys(): number {
  const fromEnv = Number(process.env.RICOCHET_STORE_STANDBYS);
  return Number.isInteger(fromEnv) && fromEnv >= 0 ? fromEnv : 1;
}

/**
 * Fresh data directories for the `brokers` of a spread cluster over `queues` queues, named so that
 * rendezvous hashing gives each broker its fair share (⌊queues ÷ brokers⌋ or one more) of the
 * queues it owns, and of those it stands by for at each rank. A broker's identity, and so its
 * queues, comes from its data directory's path: with random names, 6 queues over 3 brokers leave
 * one broker without a queue in a quarter of the runs, and one standing by for four queues in
 * others, and the figures measure the luck of the draw (a capped broker that copies twice the
 * others' share sets the cluster's pace). Bounded: after {@link BALANCE_ATTEMPTS} tries, the last
 * set.
 */
export function balancedDataDirs(prefix: string, brokers: number, queues: number): string[] {
  const fair = new Set([Math.floor(queues / brokers), Math.ceil(queues / brokers)]);
  const depth = 1 + Math.min(benchStandbys(), brokers - 1);
  for (let attempt = 1; ; attempt++) {
    const dirs = Array.from({ length: brokers }, () => mkdtempSync(join(tmpdir(), prefix)));
    const ids = dirs.map((dataDir) => brokerIdentity({ dataDir }));
    const ranked = rankQueues(queues, ids, depth);
    const balanced = Array.from({ length: depth }, (_, rank) => ranked.map((queue) => queue[rank])).every(
      (atRank) => ids.every((id) => fair.has(atRank.filter((broker) => broker === id).length)),
    );
    if (balanced || attempt >= BALANCE_ATTEMPTS) return dirs;
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Resolve once the brokers at `endpoints` (WebSocket URLs; the admin API shares the port) have
 * spread their store's queues (`queuesSpread`), as each shows in `GET /v1/cluster`. Rejects after
 * `budgetMs`, naming the routes it last saw.
 */
export async function waitUntilSpread(endpoints: readonly string[], budgetMs = 30_000): Promise<void> {
  const deadline = Date.now() + budgetMs;
  let seen: QueueRoute[][] = [];
  while (Date.now() < deadline) {
    seen = await Promise.all(endpoints.map(routesOf));
    if (queuesSpread(seen)) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the queues did not spread over ${endpoints.length} brokers: ${JSON.stringify(seen)}`);
}

async function routesOf(endpoint: string): Promise<QueueRoute[]> {
  const response = await fetch(`${endpoint.replace(/^ws/, 'http')}/v1/cluster`);
  if (!response.ok) return [];
  return ((await response.json()) as { routes?: QueueRoute[] }).routes ?? [];
}
