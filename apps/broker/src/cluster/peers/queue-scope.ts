import { MAX_STORE_QUEUES } from '@ricochet/protocol';
import type { FastifyInstance } from 'fastify';
import { admitPeerRequest, bearerTokenOf } from '../../admin/http-access.js';
import { replyError } from '../../admin/http-error.js';
import { type ServiceOf, scopeToQueue, serviceOfRequests } from '../../admin/request-scope.js';
import type { BrokerService } from '../../engine/index.js';
import { isPeerToken, type PeerAccess } from '../../gateway/peer-access.js';

/**
 * The header a broker sends to reach one queue of another broker's store through its admin API
 * (`cluster/peers/remote-admin.ts`): the queue's number, in decimal.
 */
export const QUEUE_HEADER = 'ricochet-queue';

/**
 * The routes a queue's own service answers: the admin calls of one engine (topics, groups with
 * their DLQ, redrive and FIFO heads, messages, the store's size). The others (`/v1/counters`, `/v1/cluster`,
 * `/metrics`, `/healthz`, `/readyz`, the dashboard, the transports) are the whole broker's, with no per-queue
 * meaning, so a queue header on them is refused rather than silently answered for every queue.
 */
const SCOPED_PREFIXES: readonly string[] = ['/v1/topics', '/v1/groups', '/v1/messages', '/v1/store'];

/**
 * Let brokers reach one queue of this broker's store through the admin API: a request with
 * `ricochet-queue: <q>` is answered by `peers.queueService(q)`, and must carry the cluster's peer
 * token, which grants every admin action (a forwarding broker checked its own client's
 * permissions). A request without the header is the whole broker's, under the principals' rules.
 *
 * Register it before `registerHttpAccess`: it admits the requests it scoped past the principals'
 * guard (`admitPeerRequest`), which otherwise refuses the peer token, as it is no principal's.
 * Refusals change nothing: `400` for a malformed header or a route without a per-queue meaning,
 * `401` without the peer token, `503` for a queue this broker does not serve (or no peer token).
 * @returns what the admin routes call to find their request's service.
 */
export function registerQueueScope(
  app: FastifyInstance,
  broker: BrokerService,
  peers: PeerAccess | undefined,
): ServiceOf {
  app.addHook('onRequest', async (request, reply) => {
    const header = request.headers[QUEUE_HEADER];
    if (header === undefined) return;
    // As the principals' guard does: the route matched, or the raw path when none did.
    const path = request.routeOptions.url ?? request.url.split('?', 1)[0] ?? '';
    if (!isScopedPath(path)) {
      return replyError(
        reply,
        'BAD_REQUEST',
        `${QUEUE_HEADER} applies to the admin routes of topics, groups and messages only, not to ${request.method} ${path}`,
      );
    }
    const queue = queueOf(header);
    if (queue === undefined) {
      return replyError(
        reply,
        'BAD_REQUEST',
        `${QUEUE_HEADER} must be a queue number, 0–${MAX_STORE_QUEUES - 1} in decimal, not "${String(header)}"`,
      );
    }
    // No peer token: this broker is in no cluster, so it serves no queue to other brokers.
    if (peers === undefined) return replyError(reply, 'BROKER_UNAVAILABLE', notServed(queue));
    if (!isPeerToken(peers, bearerTokenOf(request.headers.authorization))) {
      reply.header('www-authenticate', 'Bearer realm="ricochet"');
      return replyError(
        reply,
        'UNAUTHORIZED',
        `a request for one queue (${QUEUE_HEADER}) is for brokers: send Authorization: Bearer <the cluster's peer token>`,
      );
    }
    // Looked up after the token, so that a stranger cannot learn which queues this broker owns.
    const service = peers.queueService(queue);
    if (service === undefined) return replyError(reply, 'BROKER_UNAVAILABLE', notServed(queue));
    scopeToQueue(request, service);
    admitPeerRequest(request);
  });
  return serviceOfRequests(broker);
}

function isScopedPath(path: string): boolean {
  return SCOPED_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/** The queue a header names: canonical decimal only (no sign, no leading zero, no spaces), below the cap. */
function queueOf(header: string | string[]): number | undefined {
  if (typeof header !== 'string' || !/^(0|[1-9][0-9]?)$/.test(header)) return undefined;
  const queue = Number(header);
  return queue < MAX_STORE_QUEUES ? queue : undefined;
}

function notServed(queue: number): string {
  return `this broker does not serve queue ${queue}`;
}
