import type { FastifyInstance } from 'fastify';
import { replyError } from '../../admin/http-error.js';
import type { ClusterHealth } from './cluster-health.js';
import type { ClusterView } from './cluster-view.js';
import type { QueueRoute } from './queue-ownership.js';

/** What `GET /v1/cluster` reads. */
export interface ClusterRoutesSource {
  /** The cluster as the database has it. */
  readonly readView: () => Promise<ClusterView>;
  /** With queues spread: where this broker routes each queue now. */
  readonly routes?: () => QueueRoute[];
  /** With queues spread: this broker's own view of the database and its peers (`cluster-health.ts`). */
  readonly health?: ClusterHealth;
  /** How long the database may take before the answer is the last view read, marked stale. */
  readonly readBudgetMs?: number;
}

/**
 * `GET /v1/cluster`, for a broker on a PostgreSQL store: the live brokers of the database and the
 * store's queues, each with the broker holding its lease and the one rendezvous hashing assigns it
 * to (`cluster/membership/cluster-view.ts`). Read from the database at each request, so any broker
 * answers alike; a standby forwards the request to the owner anyway. A read: `admin` read, like
 * every `GET` (`http-access.ts`). With queues spread over brokers (`--store-spread`), the answer
 * also says where the broker that answers routes each queue (`routes`): to its own engine, to an
 * owner elsewhere, or nowhere while the queue changes hands; and what it sees itself (`self`): when
 * it last reached the database, and which peers answer it. A spread broker cut off from the
 * database answers within `readBudgetMs` all the same, with the last view it read and
 * `self.database.reachable` false, so a partition can be read off the broker it isolates.
 */
export function registerClusterRoutes(app: FastifyInstance, source: ClusterRoutesSource): void {
  const { readView, routes, health } = source;
  app.get('/v1/cluster', async (request, reply) => {
    try {
      const view = health === undefined ? await readView() : await withinBudget(readView(), source);
      health?.viewRead(view);
      return answer(view);
    } catch (error) {
      health?.readFailed(error);
      const stale = health?.lastView;
      if (stale !== undefined) return answer(stale);
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
  function answer(view: ClusterView) {
    return {
      ...view,
      ...(routes === undefined ? {} : { routes: routes() }),
      ...(health === undefined ? {} : { self: health.self() }),
    };
  }
}

/** `read`, or a rejection once `readBudgetMs` passed (a cut-off database never answers; TCP hangs). */
function withinBudget(read: Promise<ClusterView>, source: ClusterRoutesSource): Promise<ClusterView> {
  const budgetMs = source.readBudgetMs ?? 2_000;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the database did not answer within ${budgetMs} ms`)),
      budgetMs,
    );
  });
  return Promise.race([read, timeout]).finally(() => clearTimeout(timer));
}
