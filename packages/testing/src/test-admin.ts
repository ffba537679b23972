import type { Broker } from '@ricochet/broker';
import type { GroupConfigInput, TopicConfig } from '@ricochet/core';
import { BrokerError, ERROR_CODES } from '@ricochet/protocol';
import type { DlqEntry, GroupView, MessageView, TopicView } from './admin-views.js';

/** The most pages a listing reads before it gives up: 1 000 pages of 1 000 items. */
const MAX_PAGES = 1_000;
const PAGE_LIMIT = 1_000;

/**
 * The broker's admin HTTP API (DESIGN.md §4), typed, for test setup and checks. Requests go
 * through the broker's HTTP routes in process (Fastify's `inject`): the same validation and
 * answers as over the network, without a socket, so they never count as traffic the clock's
 * settling waits for.
 */
export class TestAdmin {
  readonly #broker: Broker;

  constructor(broker: Broker) {
    this.#broker = broker;
  }

  /** `PUT /v1/topics/:topic`: create or reconfigure a topic. @throws BrokerError `400` on a bad config. */
  putTopic(topic: string, config: Partial<TopicConfig> = {}): Promise<TopicView> {
    return this.#json('PUT', `/v1/topics/${encodeURIComponent(topic)}`, { type: 'normal', ...config });
  }

  /** `GET /v1/topics/:topic`. @throws BrokerError `404` when it does not exist. */
  getTopic(topic: string): Promise<TopicView> {
    return this.#json('GET', `/v1/topics/${encodeURIComponent(topic)}`);
  }

  /** Every topic, DLQ topics included, by name (all pages of `GET /v1/topics`). */
  listTopics(): Promise<TopicView[]> {
    return this.#allByName('/v1/topics', 'topics');
  }

  /**
   * `PUT /v1/groups/:group`: create or reconfigure a group; omitted fields take their defaults
   * (not the values they had). @throws BrokerError `400` on a bad config.
   */
  putGroup(group: string, config: GroupConfigInput = {}): Promise<GroupView> {
    return this.#json('PUT', `/v1/groups/${encodeURIComponent(group)}`, config);
  }

  /** `GET /v1/groups/:group`: its config and stats. @throws BrokerError `404` when it does not exist. */
  getGroup(group: string): Promise<GroupView> {
    return this.#json('GET', `/v1/groups/${encodeURIComponent(group)}`);
  }

  /** Every group, by name (all pages of `GET /v1/groups`). */
  listGroups(): Promise<GroupView[]> {
    return this.#allByName('/v1/groups', 'groups');
  }

  /**
   * `GET /v1/messages/:messageId`: the message and, per group, its state and delivery history;
   * `undefined` when the broker has no such message.
   */
  async getMessage(messageId: string): Promise<MessageView | undefined> {
    try {
      return await this.#json<MessageView>('GET', `/v1/messages/${encodeURIComponent(messageId)}`);
    } catch (error) {
      if (error instanceof BrokerError && error.code === ERROR_CODES.NOT_FOUND.code) return undefined;
      throw error;
    }
  }

  /** Every message in the group's DLQ, oldest first (all pages of `GET /v1/groups/:group/dlq`). */
  async listDlq(group: string): Promise<DlqEntry[]> {
    const entries: DlqEntry[] = [];
    let cursor: number | null = 0;
    for (let page = 0; page < MAX_PAGES && cursor !== null; page++) {
      const answer: { messages: DlqEntry[]; cursor: number | null } = await this.#json(
        'GET',
        `/v1/groups/${encodeURIComponent(group)}/dlq?cursor=${cursor}&limit=${PAGE_LIMIT}`,
      );
      entries.push(...answer.messages);
      cursor = answer.cursor;
    }
    return entries;
  }

  /**
   * `POST /v1/groups/:group/dlq/redrive`: send the group's DLQ messages (all, or `messageIds`)
   * back to their origin topic, for this group only (D2). Paced at `ratePerSecond` on the virtual
   * clock: past the first slice, advance the clock to let the rest through.
   * @returns how many will be redriven.
   */
  async redrive(
    group: string,
    options: { readonly messageIds?: readonly string[]; readonly ratePerSecond?: number } = {},
  ): Promise<number> {
    const answer = await this.#json<{ accepted: number }>(
      'POST',
      `/v1/groups/${encodeURIComponent(group)}/dlq/redrive`,
      options,
    );
    return answer.accepted;
  }

  async #allByName<T>(path: string, key: 'topics' | 'groups'): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const query: string = `?limit=${PAGE_LIMIT}${cursor === null ? '' : `&cursor=${cursor}`}`;
      const answer = await this.#json<Record<typeof key, T[]> & { cursor: string | null }>(
        'GET',
        `${path}${query}`,
      );
      items.push(...answer[key]);
      cursor = answer.cursor;
      if (cursor === null) break;
    }
    return items;
  }

  /** One request; a non-2xx answer throws the `BrokerError` its body carries. */
  async #json<T>(method: 'GET' | 'PUT' | 'POST', url: string, body?: unknown): Promise<T> {
    const response = await this.#broker.app.inject({
      method,
      url,
      ...(body === undefined
        ? {}
        : { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
    const parsed: unknown = response.body === '' ? undefined : JSON.parse(response.body);
    if (response.statusCode >= 200 && response.statusCode < 300) return parsed as T;
    const error = (
      parsed as { error?: { code?: number; message?: string; details?: Record<string, unknown> } }
    )?.error;
    throw new BrokerError(
      error?.code ?? response.statusCode,
      `${method} ${url}: ${error?.message ?? `HTTP ${response.statusCode}`}`,
      error?.details === undefined ? {} : { details: error.details as never },
    );
  }
}
