import type { FastifyInstance } from 'fastify';
import { replyError } from '../../admin/http-error.js';
import type { ClusterView } from './cluster-view.js';
import type { QueueRoute } from './queue-ownership.js';

/**
 * `GET /v1/cluster`, for a broker on a PostgreSQL store: the live brokers of the database and the
 * store's queues, each with the broker holding its lease and the one rendezvous hashing assigns it
 * to (`cluster/membership/cluster-view.ts`). Read from the database at each request, so any broker
 * answers alike; a standby forwards the request to the owner anyway. A read: `admin` read, like
 * every `GET` (`http-access.ts`). With queues spread over brokers (`--store-spread`), the answer
 * also says where the broker that answers routes each queue (`routes`): to its own engine, to an
 * owner elsewhere, or nowhere while the queue changes hands.
 */
export function registerClusterRoutes(
  app: FastifyInstance,
  readView: () => Promise<ClusterView>,
  routes?: () => QueueRoute[],
): void {
  app.get('/v1/cluster', async (request, reply) => {
    try {
      const view = await readView();
      return routes === undefined ? view : { ...view, routes: routes() };
    } catch (error) {
      // The database did not answer: the broker cannot tell, and says so rather than guess.
      request.log.warn({ err: error }, 'could not read the cluster from the database');
      const reason = error instanceof Error ? error.message : String(error);
      return replyError(
        reply,
        'BROKER_UNAVAILABLE',
        `could not read the cluster from the database: ${reason}`,
      );
    }
  });
}
