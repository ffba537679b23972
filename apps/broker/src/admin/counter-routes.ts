import type { FastifyInstance } from 'fastify';
import type { AdminService } from '../engine/index.js';

/**
 * `GET /v1/counters`: messages sent per topic and delivered, acked, retried, dead-lettered and
 * released per group, counted since the broker started. Two readings give rates (the dashboard polls it); the same counters are in `/metrics`, which needs
 * the metrics permission rather than admin read.
 */
export function registerCounterRoutes(app: FastifyInstance, engine: AdminService): void {
  app.get('/v1/counters', () => engine.metrics.counterTotals());
}
