import type { FastifyInstance } from 'fastify';
import type { ServiceOf } from './request-scope.js';

/**
 * `GET /v1/store`: how much data the store holds, `{ storedBytes }`, the figure `--max-store-bytes`
 * compares against (DESIGN.md §5). With queues spread over brokers it is every queue's, wherever
 * each is owned: each broker's local copy holds them all. Brokers read one queue's share of each
 * other with the queue header.
 */
export function registerStoreRoutes(app: FastifyInstance, serviceOf: ServiceOf): void {
  app.get('/v1/store', async (request) => ({ storedBytes: await serviceOf(request).storedBytes() }));
}
