import type { MessageView } from '@ricochet/protocol';
import type { FastifyInstance } from 'fastify';
import { replyError } from './http-error.js';
import type { ServiceOf } from './request-scope.js';

/** `GET /v1/messages/:messageId`: the message and, per group, where it stands and its delivery history. */
export function registerMessageRoutes(app: FastifyInstance, serviceOf: ServiceOf): void {
  app.get<{ Params: { messageId: string } }>('/v1/messages/:messageId', async (request, reply) => {
    const found = await serviceOf(request).describeMessage(request.params.messageId);
    if (!found) {
      return replyError(reply, 'NOT_FOUND', `message "${request.params.messageId}" does not exist`, {
        details: { messageId: request.params.messageId },
      });
    }
    const { body, ...meta } = found.message;
    const answer: MessageView = {
      message: {
        ...meta,
        bodyBytes: body.byteLength,
        bodyBase64: Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('base64'),
      },
      groups: found.groups,
    };
    return answer;
  });
}
