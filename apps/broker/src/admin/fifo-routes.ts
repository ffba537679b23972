import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { replyInvalidBody } from './http-error.js';
import { pageLimitSchema } from './page-query.js';
import type { ServiceOf } from './request-scope.js';

const fifoQuerySchema = z.object({ limit: pageLimitSchema });

/**
 * `GET /v1/groups/:group/fifo?limit=`: P5, the message groups of a group that a head message holds
 * now (later messages of each wait until the head is committed or dead-lettered), with the head's
 * id, state and attempt. Empty for a group that is not FIFO. Read-only.
 */
export function registerFifoRoutes(app: FastifyInstance, serviceOf: ServiceOf): void {
  app.get<{ Params: { group: string } }>('/v1/groups/:group/fifo', async (request, reply) => {
    const query = fifoQuerySchema.safeParse(request.query);
    if (!query.success) return replyInvalidBody(reply, query.error);
    return { messageGroups: await serviceOf(request).fifoHeads(request.params.group, query.data.limit) };
  });
}
