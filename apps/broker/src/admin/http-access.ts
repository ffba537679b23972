import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccessControl } from '../auth/access-control.js';
import type { Principal } from '../auth/auth-file.js';
import type { Action } from '../auth/permissions.js';
import { replyError } from './http-error.js';

/**
 * Paths served to anyone: the probes (`/healthz`, `/readyz`), the WebSocket upgrade (its `hello` carries the token),
 * and the HTTP transport, which checks the token itself and judges each frame by its own
 * permission (publish, consume), never by `admin`.
 */
const OPEN_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/v1/ws', '/v1/frames']);

/**
 * What an HTTP request asks to do (DESIGN.md §7), from its method and path alone: `/metrics`
 * needs `metrics`; every other path (any admin route, and paths no route serves, so a 404 tells
 * nothing to a stranger) needs `admin` read for GET and HEAD, `admin` write for anything else.
 * `undefined` for the open paths and the dashboard's files under `/ui`.
 */
export function httpActionOf(method: string, path: string): Action | undefined {
  if (OPEN_PATHS.has(path) || isDashboardPath(path)) return undefined;
  if (path === '/metrics') return { type: 'metrics' };
  if (path === '/v1/events' && method === 'GET') return { type: 'events' };
  return { type: 'admin', level: method === 'GET' || method === 'HEAD' ? 'read' : 'write' };
}

/**
 * The dashboard's static files: open, as they hold no data; the page asks for a token when the
 * admin API it calls answers 401.
 */
function isDashboardPath(path: string): boolean {
  return path === '/ui' || path.startsWith('/ui/');
}

/** The token of an `Authorization: Bearer <token>` header (the scheme in any case), if any. */
export function bearerTokenOf(header: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1];
}

/** The principal each request was let in as, when the broker has an auth file. */
const principals = new WeakMap<FastifyRequest, Principal>();

/** Who made `request`: its principal under the auth file, or `undefined` without one (anyone may). */
export function principalOf(request: FastifyRequest): Principal | undefined {
  return principals.get(request);
}

/** Requests a broker made for one queue with the peer token (`queue-scope.ts`): no principal's. */
const admittedPeerRequests = new WeakSet<FastifyRequest>();

/**
 * Let a request past the principals' guard: a broker's, for one queue, that showed the cluster's
 * peer token (`queue-scope.ts`, whose hook runs before this guard's). Only an admitted request is
 * let through, so a request the peer hook did not see is judged here like any other.
 */
export function admitPeerRequest(request: FastifyRequest): void {
  admittedPeerRequests.add(request);
}

/** Whether `request` is a broker's, let in by the peer token ({@link admitPeerRequest}). */
export function isPeerRequest(request: FastifyRequest): boolean {
  return admittedPeerRequests.has(request);
}

/**
 * Guard every HTTP route with the caller's token. It runs on each request before the body is read
 * and before the route looks anything up: `401` (with `WWW-Authenticate: Bearer`) for a missing or
 * unknown token, `403` for an action the principal may not take; either changes nothing. A
 * request {@link admitPeerRequest} let through is a broker's, judged by the peer token instead.
 */
export function registerHttpAccess(app: FastifyInstance, access: AccessControl): void {
  if (!access.enabled) return;
  app.addHook('onRequest', async (request, reply) => {
    if (admittedPeerRequests.has(request)) return;
    // The route the request matched, so no spelling of a path (`//metrics`) reaches a route under
    // another's rule; a request no route serves is judged by its raw path.
    const path = request.routeOptions.url ?? request.url.split('?', 1)[0] ?? '';
    const action = httpActionOf(request.method, path);
    if (action === undefined) return;
    const where = `${request.method} ${path}`;
    const authn = access.authenticate(bearerTokenOf(request.headers.authorization), where);
    if (!authn.ok) {
      reply.header('www-authenticate', 'Bearer realm="ricochet"');
      return replyError(reply, 'UNAUTHORIZED', `${authn.message}: send Authorization: Bearer <token>`);
    }
    const decision = access.authorize(authn.caller, action, where);
    if (decision.ok) {
      principals.set(request, decision.principal);
      return;
    }
    if (decision.status === 401) reply.header('www-authenticate', 'Bearer realm="ricochet"');
    return replyError(reply, decision.status === 401 ? 'UNAUTHORIZED' : 'FORBIDDEN', decision.message);
  });
}
