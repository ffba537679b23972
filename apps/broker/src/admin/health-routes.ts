import type { FastifyInstance } from 'fastify';
import type { BrokerService } from '../engine/index.js';

/** `GET /healthz` (200 while serving, 503 while draining) and `GET /metrics` (Prometheus). */
export function registerHealthRoutes(
  app: FastifyInstance,
  engine: BrokerService,
  accepting: () => boolean,
): void {
  app.get('/healthz', async (_request, reply) => {
    if (!accepting()) return reply.code(503).send({ status: 'draining' });
    return { status: 'ok' };
  });
  app.get('/metrics', async (_request, reply) => {
    const text = await engine.metrics.render();
    return reply.type(engine.metrics.registry.contentType).send(text);
  });
}
