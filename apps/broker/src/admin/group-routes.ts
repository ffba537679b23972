import { GROUP_NAME_PATTERN, groupConfigInputSchema } from '@ricochet/protocol';
import type { FastifyInstance } from 'fastify';
import { replyError, replyInvalidBody } from './http-error.js';
import { namePageQuerySchema, nextNameCursor } from './page-query.js';
import type { ServiceOf } from './request-scope.js';

/**
 * `PUT /v1/groups/:group` creates or reconfigures a group (omitted fields keep their defaults);
 * `GET` describes it with its stats; `GET /v1/groups?cursor=&limit=` lists groups by name, each
 * described as its `GET` does. `POST /v1/groups/:group/pause` and `/resume` (admin write) hold or
 * release every delivery of the group by hand (DESIGN.md §11), and answer with the group.
 */
export function registerGroupRoutes(app: FastifyInstance, serviceOf: ServiceOf): void {
  app.get('/v1/groups', async (request, reply) => {
    const query = namePageQuerySchema.safeParse(request.query);
    if (!query.success) return replyInvalidBody(reply, query.error);
    const page = await serviceOf(request).listGroups(query.data.cursor, query.data.limit);
    return { groups: page.items, cursor: nextNameCursor(page.lastName) };
  });

  app.put<{ Params: { group: string } }>('/v1/groups/:group', async (request, reply) => {
    const { group } = request.params;
    if (!GROUP_NAME_PATTERN.test(group)) {
      return replyError(reply, 'BAD_REQUEST', `"${group}" is not a group name: 1–120 of A–Z a–z 0–9 _ . -`);
    }
    const parsed = groupConfigInputSchema.safeParse(request.body ?? {});
    if (!parsed.success) return replyInvalidBody(reply, parsed.error);
    return serviceOf(request).putGroup(group, parsed.data);
  });

  app.get<{ Params: { group: string } }>('/v1/groups/:group', async (request, reply) => {
    const group = await serviceOf(request).describeGroup(request.params.group);
    if (!group)
      return replyError(reply, 'NOT_FOUND', `group "${request.params.group}" does not exist`, {
        details: { group: request.params.group },
      });
    return group;
  });

  for (const action of ['pause', 'resume'] as const) {
    app.post<{ Params: { group: string } }>(`/v1/groups/:group/${action}`, async (request, reply) => {
      const group = await serviceOf(request).pauseGroup(request.params.group, action === 'pause');
      if (!group)
        return replyError(reply, 'NOT_FOUND', `group "${request.params.group}" does not exist`, {
          details: { group: request.params.group },
        });
      return group;
    });
  }
}
