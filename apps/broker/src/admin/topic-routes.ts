import { TOPIC_NAME_PATTERN, topicConfigSchema } from '@ricochet/protocol';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { replyError, replyInvalidBody } from './http-error.js';
import { namePageQuerySchema, nextNameCursor } from './page-query.js';
import type { ServiceOf } from './request-scope.js';

/**
 * `PUT /v1/topics/:topic` creates or reconfigures a topic; `GET` describes it; `GET
 * /v1/topics?cursor=&limit=` lists topics (DLQ topics too) by name, each described as its `GET` does;
 * `GET /v1/topics/:topic/backlog` shows R4 for it: its `maxBacklogMessages` and the backlog of each
 * group reading it, the figure sends are throttled on. Brokers with queues spread read it from each
 * other's queues to throttle over the whole cluster.
 */
export function registerTopicRoutes(app: FastifyInstance, serviceOf: ServiceOf): void {
  app.get('/v1/topics', async (request, reply) => {
    const query = namePageQuerySchema.safeParse(request.query);
    if (!query.success) return replyInvalidBody(reply, query.error);
    const page = await serviceOf(request).listTopics(query.data.cursor, query.data.limit);
    return { topics: page.items, cursor: nextNameCursor(page.lastName) };
  });

  app.put<{ Params: { topic: string } }>('/v1/topics/:topic', async (request, reply) => {
    const { topic } = request.params;
    if (!TOPIC_NAME_PATTERN.test(topic)) {
      return replyError(reply, 'BAD_REQUEST', `"${topic}" is not a topic name: 1–127 of A–Z a–z 0–9 _ . -`);
    }
    const parsed = topicConfigSchema.safeParse(request.body ?? {});
    if (!parsed.success) return replyInvalidBody(reply, parsed.error);
    return serviceOf(request).putTopic(topic, parsed.data);
  });

  app.get<{ Params: { topic: string } }>('/v1/topics/:topic', async (request, reply) => {
    const topic = await serviceOf(request).describeTopic(request.params.topic);
    return topic ?? replyNoSuchTopic(reply, request.params.topic);
  });

  app.get<{ Params: { topic: string } }>('/v1/topics/:topic/backlog', async (request, reply) => {
    const backlog = await serviceOf(request).topicBacklog(request.params.topic);
    return backlog ?? replyNoSuchTopic(reply, request.params.topic);
  });
}

function replyNoSuchTopic(reply: FastifyReply, topic: string): FastifyReply {
  return replyError(reply, 'NOT_FOUND', `topic "${topic}" does not exist`, { details: { topic } });
}
