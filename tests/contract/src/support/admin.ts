import type { GroupConfigInput, TopicConfig } from '@ricochet/core';

/** A thin client for the broker's admin HTTP API (DESIGN.md §4), for test setup and checks. */
export class AdminApi {
  readonly #baseUrl: string;

  constructor(baseUrl: string) {
    this.#baseUrl = baseUrl;
  }

  putGroup(group: string, config: GroupConfigInput): Promise<GroupView> {
    return this.#json('PUT', `/v1/groups/${group}`, config);
  }

  getGroup(group: string): Promise<GroupView> {
    return this.#json('GET', `/v1/groups/${group}`);
  }

  putTopic(topic: string, config: TopicConfig): Promise<unknown> {
    return this.#json('PUT', `/v1/topics/${topic}`, config);
  }

  getTopic(topic: string): Promise<TopicView> {
    return this.#json('GET', `/v1/topics/${encodeURIComponent(topic)}`);
  }

  /** One page of `GET /v1/topics`; `query` as in `listDlq`, e.g. `?limit=2&cursor=…`. */
  listTopics(query = ''): Promise<{ topics: TopicView[]; cursor: string | null }> {
    return this.#json('GET', `/v1/topics${query}`);
  }

  /** One page of `GET /v1/groups`; `query` as in `listDlq`. */
  listGroups(query = ''): Promise<{ groups: GroupView[]; cursor: string | null }> {
    return this.#json('GET', `/v1/groups${query}`);
  }

  getMessage(messageId: string): Promise<MessageView> {
    return this.#json('GET', `/v1/messages/${messageId}`);
  }

  listDlq(group: string, query = ''): Promise<{ messages: DlqEntry[]; cursor: number | null }> {
    return this.#json('GET', `/v1/groups/${group}/dlq${query}`);
  }

  redrive(
    group: string,
    body: { messageIds?: string[]; ratePerSecond?: number } = {},
  ): Promise<{ accepted: number }> {
    return this.#json('POST', `/v1/groups/${group}/dlq/redrive`, body);
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

  async #json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await this.fetch(method, path, body);
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${path} → ${response.status}: ${text}`);
    return JSON.parse(text) as T;
  }
}

export interface GroupView {
  readonly name: string;
  readonly config: Record<string, unknown>;
  readonly stats: { ready: number; inflight: number; waitingRetry: number; dlq: number; committed: number };
}

export interface TopicView {
  readonly name: string;
  readonly config: Record<string, unknown>;
  readonly stats: { firstOffset: number; nextOffset: number; messages: number };
}

export interface MessageView {
  readonly message: { messageId: string; topic: string; offset: number; bodyBase64: string };
  readonly groups: {
    group: string;
    state: string;
    deliveryAttempt?: number;
    history: {
      deliveryAttempt: number;
      result: string;
      reason?: string;
      consumer: string;
      consumerId?: string;
      deliveredAt: number;
      settledAt: number;
    }[];
  }[];
}

export interface DlqEntry {
  readonly messageId: string;
  readonly offset: number;
  readonly originTopic: string;
  readonly attempts: number;
  readonly reason: string;
  readonly bodyBase64: string;
}
