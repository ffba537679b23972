import { Readable } from 'node:stream';
import type { ReadinessAnswer } from '@ricochet/protocol';
import type { FastifyInstance } from 'fastify';
import type { AdminService } from '../engine/index.js';

/** What the probes answer from: the app's drain state and, spread over brokers, the queues' owners. */
export interface HealthState {
  /** Whether the broker takes new work: both probes answer 503 while it drains. */
  readonly accepting: () => boolean;
  /**
   * The queues this broker should serve that have no owner now (routed nowhere: between owners,
   * or not yet taken after a start); empty when every queue is served here or by its owner.
   */
  readonly queuesWithoutOwner: () => readonly number[];
}

/**
 * `GET /healthz` (liveness: 200 while serving, 503 while draining), `GET /readyz` (readiness: 200
 * once every queue it should serve has an owner, 503 with the reason before and while draining)
 * and `GET /metrics` (Prometheus).
 */
export function registerHealthRoutes(app: FastifyInstance, engine: AdminService, state: HealthState): void {
  app.get('/healthz', async (_request, reply) => {
    if (!state.accepting()) return reply.code(503).send({ status: 'draining' });
    return { status: 'ok' };
  });
  app.get('/readyz', async (_request, reply) => {
    const answer = readinessOf(state);
    return reply.code(answer.status === 'ready' ? 200 : 503).send(answer);
  });
  app.get('/metrics', async (_request, reply) => {
    // Streamed a slice at a time: one string of 100,000 groups' series, joined and written in
    // one turn, held the loop for tens of milliseconds.
    const slices = await engine.metrics.renderSlices();
    return reply.type(engine.metrics.registry.contentType).send(Readable.from(slices, { objectMode: false }));
  });
}

/** The answer of `GET /readyz` now. */
export function readinessOf(state: HealthState): ReadinessAnswer {
  if (!state.accepting()) return { status: 'draining', reason: 'the broker is shutting down' };
  const queues = state.queuesWithoutOwner();
  if (queues.length === 0) return { status: 'ready' };
  return {
    status: 'unowned',
    reason: `${queues.length === 1 ? 'queue' : 'queues'} ${queues.join(', ')} without an owner yet: their requests wait for one, and are answered 503 if none comes in time`,
    queuesWithoutOwner: queues,
  };
}
