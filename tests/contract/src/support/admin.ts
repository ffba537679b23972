import type { GroupConfigInput, TopicConfig } from '@ricochet/core';
import {
  ADMIN_ANSWER_SCHEMAS,
  type AdminAnswer,
  type AdminRoute,
  checkAdminAnswer,
  type DeadLetterEntry,
  type DeadLetterPage,
  type GroupPage,
  type GroupView,
  type MessageView,
  type RedriveAnswer,
  type TopicPage,
  type TopicSaved,
  type TopicView,
} from '@ricochet/protocol';

// The admin API's answers, one schema each in @ricochet/protocol; every answer is checked against its own.
export type { DeadLetterEntry as DlqEntry, GroupView, MessageView, TopicView };

/** A thin client for the broker's admin HTTP API (DESIGN.md §4), for test setup and checks. */
export class AdminApi {
  readonly #baseUrl: string;

  constructor(baseUrl: string) {
    this.#baseUrl = baseUrl;
  }

  putGroup(group: string, config: GroupConfigInput): Promise<GroupView> {
    return this.#json('PUT /v1/groups/:group', `/v1/groups/${group}`, config);
  }

  getGroup(group: string): Promise<GroupView> {
    return this.#json('GET /v1/groups/:group', `/v1/groups/${group}`);
  }

  /** `POST /v1/groups/:group/pause`: hold every delivery of the group (DESIGN.md §11). */
  pauseGroup(group: string): Promise<GroupView> {
    return this.#json('POST /v1/groups/:group/pause', `/v1/groups/${group}/pause`, {});
  }

  /** `POST /v1/groups/:group/resume`: deliver again, and close an open breaker (DESIGN.md §11). */
  resumeGroup(group: string): Promise<GroupView> {
    return this.#json('POST /v1/groups/:group/resume', `/v1/groups/${group}/resume`, {});
  }

  putTopic(topic: string, config: TopicConfig): Promise<TopicSaved> {
    return this.#json('PUT /v1/topics/:topic', `/v1/topics/${topic}`, config);
  }

  getTopic(topic: string): Promise<TopicView> {
    return this.#json('GET /v1/topics/:topic', `/v1/topics/${encodeURIComponent(topic)}`);
  }

  /** One page of `GET /v1/topics`; `query` as in `listDlq`, e.g. `?limit=2&cursor=…`. */
  listTopics(query = ''): Promise<TopicPage> {
    return this.#json('GET /v1/topics', `/v1/topics${query}`);
  }

  /** One page of `GET /v1/groups`; `query` as in `listDlq`. */
  listGroups(query = ''): Promise<GroupPage> {
    return this.#json('GET /v1/groups', `/v1/groups${query}`);
  }

  getMessage(messageId: string): Promise<MessageView> {
    return this.#json('GET /v1/messages/:messageId', `/v1/messages/${messageId}`);
  }

  listDlq(group: string, query = ''): Promise<DeadLetterPage> {
    return this.#json('GET /v1/groups/:group/dlq', `/v1/groups/${group}/dlq${query}`);
  }

  redrive(
    group: string,
    body: { messageIds?: string[]; ratePerSecond?: number } = {},
  ): Promise<RedriveAnswer> {
    return this.#json('POST /v1/groups/:group/dlq/redrive', `/v1/groups/${group}/dlq/redrive`, body);
  }

  /** The raw response, for status checks. */
  fetch(method: string, path: string, body?: unknown): Promise<Response> {
    return fetch(`${this.#baseUrl}${path}`, {
      method,
      ...(body === undefined
        ? {}
        : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
    });
  }

  /** One request of `route` at `path`; its answer is checked against the route's schema. */
  async #json<R extends AdminRoute>(route: R, path: string, body?: unknown): Promise<AdminAnswer<R>> {
    const method = route.slice(0, route.indexOf(' '));
    const response = await this.fetch(method, path, body);
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text}`);
    const check = checkAdminAnswer(ADMIN_ANSWER_SCHEMAS[route], JSON.parse(text));
    if (!check.ok) throw new Error(`${method} ${path} answered off its schema: ${check.problem}`);
    return check.value as AdminAnswer<R>;
  }
}
