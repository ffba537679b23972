import type { FastifyInstance } from 'fastify';
import { isPeerRequest } from '../../admin/http-access.js';
import { replyError } from '../../admin/http-error.js';
import { FEED_PATH, type FeedHub } from '../../store/postgres/standby-feed.js';
import { QUEUE_HEADER } from '../peers/queue-scope.js';

/**
 * `GET /v1/store/feed`: the feed of one queue this broker owns, for its standbys
 * (`store/postgres/standby-feed.ts`): each batch the queue's store commits, streamed until the
 * standby hangs up or this broker stops owning the queue. Brokers only: the request names its queue
 * (`ricochet-queue`) and carries the cluster's peer token, which `queue-scope.ts` checks first,
 * answering `401` without it and `503` for a queue this broker does not own; a request without
 * the queue header is nobody's feed, and is answered `401` too. The streams end when the broker
 * closes its HTTP server.
 */
export function registerFeedRoute(app: FastifyInstance, hub: FeedHub): void {
  // Before the server waits for its responses to end: a stream ends only when told to.
  app.addHook('preClose', async () => hub.end());
  app.get(FEED_PATH, (request, reply) => {
    if (!isPeerRequest(request)) {
      reply.header('www-authenticate', 'Bearer realm="ricochet"');
      return replyError(
        reply,
        'UNAUTHORIZED',
        `the store's feed is for brokers: send ${QUEUE_HEADER} and Authorization: Bearer <the cluster's peer token>`,
      );
    }
    const queue = Number(request.headers[QUEUE_HEADER]);
    // The stream is the hub's from here: Fastify neither answers nor times it out.
    reply.hijack();
    const response = reply.raw;
    response.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'no-store' });
    response.flushHeaders();
    request.raw.socket.setNoDelay(true);
    request.raw.socket.setTimeout(0);
    hub.follow(queue, response);
    return reply;
  });
}
