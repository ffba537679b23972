/** A queue's route as a broker of a spread cluster shows it in `GET /v1/cluster`. */
interface RouteJson {
  readonly queue: number;
  readonly assigned: boolean;
  readonly to: 'here' | 'elsewhere' | 'nowhere';
}

/**
 * Resolve once the brokers at `endpoints` (WebSocket URLs; the admin API shares the port) have
 * spread their store's queues: every queue assigned to exactly one of them, each broker owning
 * exactly the queues assigned to it and routing every other one to an owner. Rejects after
 * `budgetMs`, naming the routes it last saw.
 */
export async function waitUntilSpread(endpoints: readonly string[], budgetMs = 30_000): Promise<void> {
  const deadline = Date.now() + budgetMs;
  let seen: RouteJson[][] = [];
  while (Date.now() < deadline) {
    seen = await Promise.all(endpoints.map(routesOf));
    const queues = seen[0]?.length ?? 0;
    const assigned = seen.flat().filter((route) => route.assigned).length;
    const settled =
      queues > 0 &&
      assigned === queues &&
      seen.every((routes) =>
        routes.every((route) => route.to !== 'nowhere' && (route.to === 'here') === route.assigned),
      );
    if (settled) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`the queues did not spread over ${endpoints.length} brokers: ${JSON.stringify(seen)}`);
}

async function routesOf(endpoint: string): Promise<RouteJson[]> {
  const response = await fetch(`${endpoint.replace(/^ws/, 'http')}/v1/cluster`);
  if (!response.ok) return [];
  return ((await response.json()) as { routes?: RouteJson[] }).routes ?? [];
}
