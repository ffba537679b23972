import { type DeadLetterEntry, type DeadLetterPage, MESSAGE_ID_PATTERN } from '@ricochet/protocol';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { StoredMessage } from '../store/records.js';
import { replyInvalidBody } from './http-error.js';
import { pageLimitSchema } from './page-query.js';
import { isQueueScoped, type ServiceOf } from './request-scope.js';

const listQuerySchema = z.object({
  cursor: z.coerce.number().int().min(0).default(0),
  limit: pageLimitSchema,
});

const redriveBodySchema = z
  .object({
    messageIds: z.array(z.string().regex(MESSAGE_ID_PATTERN)).min(1).max(10_000).optional(),
    // Not only whole numbers: a broker of a cluster whose queues are spread asks each owner for its share.
    ratePerSecond: z.number().positive().max(100_000).optional(),
  })
  .strict();

/**
 * D2: `GET /v1/groups/:group/dlq?cursor=&limit=` lists the group's DLQ; `POST
 * /v1/groups/:group/dlq/redrive` sends all (or the named) messages back to their origin topic for
 * this group only, at `ratePerSecond` (default 500). The POST answers `202` with how many will be
 * redriven; the redrive itself runs in the background at the capped rate.
 */
export function registerDeadLetterRoutes(app: FastifyInstance, serviceOf: ServiceOf): void {
  app.get<{ Params: { group: string } }>('/v1/groups/:group/dlq', async (request, reply) => {
    const query = listQuerySchema.safeParse(request.query);
    if (!query.success) return replyInvalidBody(reply, query.error);
    const page = await serviceOf(request).listDeadLetters(
      request.params.group,
      query.data.cursor,
      query.data.limit,
    );
    const forBroker = isQueueScoped(request);
    const answer: DeadLetterPage = {
      messages: page.messages.map((message) => describeDeadLetter(message, forBroker)),
      cursor: page.cursor,
    };
    return answer;
  });

  app.post<{ Params: { group: string } }>('/v1/groups/:group/dlq/redrive', async (request, reply) => {
    const body = redriveBodySchema.safeParse(request.body ?? {});
    if (!body.success) return replyInvalidBody(reply, body.error);
    const { accepted } = await serviceOf(request).redrive(request.params.group, {
      ...(body.data.messageIds === undefined ? {} : { messageIds: body.data.messageIds }),
      ...(body.data.ratePerSecond === undefined ? {} : { ratePerSecond: body.data.ratePerSecond }),
    });
    return reply.code(202).send({ accepted });
  });
}

/**
 * A DLQ entry as the API shows it. A broker reaching one queue (`cluster/peers/remote-admin.ts`) also
 * gets `storedAt` and `lastLease`, the two fields it could not otherwise rebuild the stored message
 * with (the topic and `deadLetter.group` follow from the group); they are no operator's business.
 */
export function describeDeadLetter(message: StoredMessage, forBroker: boolean): DeadLetterEntry {
  const { body, deadLetter, topic: _topic, storedAt, ...rest } = message;
  // D1 writes every copy in a `%DLQ%<group>` topic with its record; one without is a broken store.
  if (deadLetter === undefined) throw new Error(`DLQ message ${message.messageId} has no dead-letter record`);
  return {
    ...rest,
    originTopic: deadLetter.originTopic,
    originOffset: deadLetter.originOffset,
    attempts: deadLetter.attempts,
    reason: deadLetter.reason,
    deadLetteredAt: deadLetter.deadLetteredAt,
    ...(deadLetter.cause === undefined ? {} : { cause: deadLetter.cause }),
    ...(deadLetter.firstFailedAt === undefined ? {} : { firstFailedAt: deadLetter.firstFailedAt }),
    bodyBytes: body.byteLength,
    bodyBase64: Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('base64'),
    ...(forBroker ? { storedAt, lastLease: deadLetter.lastLease } : {}),
  };
}
