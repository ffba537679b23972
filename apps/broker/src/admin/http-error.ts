import { BrokerError, ERROR_CODES, type ErrorName, errorNameOf } from '@ricochet/protocol';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { z } from 'zod';

/**
 * The HTTP status of a catalogue code: the code itself, except 530 (not an HTTP status), which
 * is 429 Too Many Requests. The body always carries the catalogue code, so clients branch on it.
 */
export function httpStatusOf(code: number): number {
  return code === ERROR_CODES.TOO_MANY_REQUESTS.code ? 429 : code;
}

/** Answer with a catalogue error: `{ error: { code, name, message, details?, issues? } }`. */
export function replyError(
  reply: FastifyReply,
  name: ErrorName,
  message: string,
  extra: { details?: Record<string, unknown>; issues?: unknown[] } = {},
): FastifyReply {
  const code = ERROR_CODES[name].code;
  return reply.code(httpStatusOf(code)).send({ error: { code, name, message, ...extra } });
}

/** Answer a body that failed its schema with `400` and every issue, path by path. */
export function replyInvalidBody(reply: FastifyReply, error: z.ZodError): FastifyReply {
  const issues = error.issues.map((issue) => ({ path: issue.path.map(String), message: issue.message }));
  const first = issues[0];
  const where = first && first.path.length > 0 ? `${first.path.join('.')}: ` : '';
  return replyError(
    reply,
    'BAD_REQUEST',
    `invalid body: ${where}${first?.message ?? 'does not match the schema'}`,
    { issues },
  );
}

/**
 * The admin API's one error path: a `BrokerError` a route lets through (an unknown group's `404`,
 * the router's `503` for a queue between owners) is answered with its catalogue code and status,
 * rather than as a `500`. Anything else is a route's bug and goes on to Fastify's own handler.
 */
export function registerBrokerErrorReplies(app: FastifyInstance): void {
  app.setErrorHandler((error, _request, reply) => {
    if (!(error instanceof BrokerError)) return reply.send(error);
    const details = error.details === undefined ? {} : { details: { ...error.details } };
    return replyError(reply, errorNameOf(error.code) ?? 'INTERNAL_ERROR', error.message, details);
  });
}
