import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assignQueues, brokerIdentity, type QueueRoute, queuesSpread } from '@ricochet/broker';

/** Sets of data directories tried before {@link balancedDataDirs} settles for an uneven one. */
const BALANCE_ATTEMPTS = 500;

/**
 * Fresh data directories for the `brokers` of a spread cluster over `queues` queues, named so that
 * rendezvous hashing gives each broker its fair share (⌊queues ÷ brokers⌋ or one more). A broker's
 * identity, and so its queues, comes from its data directory's path: with random names, 6 queues
 * over 3 brokers leave one broker without a queue in a quarter of the runs, and the figures
 * measure the luck of the draw. Bounded: after {@link BALANCE_ATTEMPTS} tries, the last set.
 */
export function balancedDataDirs(prefix: string, brokers: number, queues: number): string[] {
  const fair = new Set([Math.floor(queues / brokers), Math.ceil(queues / brokers)]);
  for (let attempt = 1; ; attempt++) {
    const dirs = Array.from({ length: brokers }, () => mkdtempSync(join(tmpdir(), prefix)));
    const ids = dirs.map((dataDir) => brokerIdentity({ dataDir }));
    const owners = assignQueues(queues, ids);
    const balanced = ids.every((id) => fair.has(owners.filter((owner) => owner === id).length));
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
