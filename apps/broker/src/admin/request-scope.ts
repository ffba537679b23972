import type { FastifyRequest } from 'fastify';
import type { AdminService } from '../engine/index.js';

/**
 * Which service answers an admin request: the whole broker's, or one queue's. The admin routes ask
 * here; a hook above them (the cluster's queue scope, `cluster/peers/queue-scope.ts`) scopes a
 * request to one queue before they run. The admin API owns this seam so that it never imports the
 * cluster: on a single broker nothing scopes a request and every route answers for the broker.
 */

/** The service that answers an admin request: the whole broker's, or one queue's. */
export type ServiceOf = (request: FastifyRequest) => AdminService;

/** The queue services of the requests admitted with the peer token, until they are collected. */
const scopedRequests = new WeakMap<FastifyRequest, AdminService>();

/** Answer `request` with one queue's `service` (a broker's request admitted with the peer token). */
export function scopeToQueue(request: FastifyRequest, service: AdminService): void {
  scopedRequests.set(request, service);
}

/** The service of each request: its queue's when it was scoped to one, else `broker`. */
export function serviceOfRequests(broker: AdminService): ServiceOf {
  return (request) => scopedRequests.get(request) ?? broker;
}

/** Whether a request is a broker's, for one queue, admitted with the peer token. */
export function isQueueScoped(request: FastifyRequest): boolean {
  return scopedRequests.has(request);
}
