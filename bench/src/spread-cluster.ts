import { type QueueRoute, queuesSpread } from '@ricochet/broker';

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
