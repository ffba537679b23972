import { ADMIN_ANSWER_SCHEMAS, type AdminRoute, checkAdminAnswer } from '@ricochet/protocol';
import type { FastifyInstance } from 'fastify';

/** The probes, whose 503 carries their own answer rather than an error answer. */
const PROBE_ROUTES: ReadonlySet<string> = new Set(['GET /healthz', 'GET /readyz']);

/**
 * Check every JSON answer of the admin API against its schema in `@ricochet/protocol`, the one the
 * CLI, the testing kit and the dashboard parse it with, before it is serialised. A check, not a
 * Fastify response schema: fast-json-stringify would write only the fields the schema names (a
 * broker's DLQ page carries `storedAt` and `lastLease` for its peers) and coerce rather than
 * reject, so the answer would change; this sends the handler's object as it was, or, when it
 * does not match, fails the request with a `500` naming the field (a broker bug, not the caller's).
 * Error answers are left alone: they come from `replyError` and Fastify, not from the routes.
 */
export function registerAnswerCheck(app: FastifyInstance): void {
  app.addHook('preSerialization', async (request, reply, payload) => {
    const route = `${request.method} ${request.routeOptions.url ?? ''}`;
    if (!Object.hasOwn(ADMIN_ANSWER_SCHEMAS, route)) return payload;
    // The probes answer their body with 503 (draining, not ready); any other 4xx/5xx is an error answer.
    const probe = PROBE_ROUTES.has(route) && reply.statusCode === 503;
    if (reply.statusCode >= 400 && !probe) return payload;
    const check = checkAdminAnswer(ADMIN_ANSWER_SCHEMAS[route as AdminRoute], payload);
    if (!check.ok) throw new Error(`the answer of ${route} does not match its schema: ${check.problem}`);
    return payload;
  });
}
