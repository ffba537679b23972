import type { Broker } from '@ricochet/broker';
import type { GroupConfigInput, TopicConfig } from '@ricochet/core';
import {
  ADMIN_ANSWER_SCHEMAS,
  type AdminAnswer,
  type AdminErrorAnswer,
  type AdminRetryOptions,
  type AdminRoute,
  BrokerError,
  checkAdminAnswer,
  type DeadLetterEntry,
  type DeadLetterPage,
  ERROR_CODES,
  type GroupView,
  type MessageView,
  retryUnavailable,
  type TopicSaved,
  type TopicView,
} from '@ricochet/protocol';

/** The most pages a listing reads before it gives up: 1 000 pages of 1 000 items. */
const MAX_PAGES = 1_000;
const PAGE_LIMIT = 1_000;

/** Options of {@link TestAdmin}. */
export interface TestAdminOptions {
  /**
   * How a `503` is retried (`retryUnavailable` of `@ricochet/protocol`). Its waits are real time,
   * not the virtual clock's: a broker answers `503` while it moves a queue or drains, which runs
   * on real time. @default real timers, the system clock, `Math.random`
   */
  readonly retry?: Partial<AdminRetryOptions>;
}

/**
 * The broker's admin HTTP API (DESIGN.md §4), typed, for test setup and checks. Requests go
 * through the broker's HTTP routes in process (Fastify's `inject`): the same validation and
 * answers as over the network, without a socket, so they never count as traffic the clock's
 * settling waits for.
 *
 * An idempotent request (a read, a `PUT`) answered `503` (a broker whose queues spread over a
 * cluster, between owners) is made again after a short backoff, a few times within a few
 * seconds, honouring `Retry-After`; a redrive is not, as a repeat could redrive twice.
 */
export class TestAdmin {
  readonly #broker: Pick<Broker, 'app'>;
  readonly #retry: AdminRetryOptions;

  constructor(broker: Pick<Broker, 'app'>, options: TestAdminOptions = {}) {
    this.#broker = broker;
    this.#retry = { sleep: realSleep, ...options.retry };
  }

  /** `PUT /v1/topics/:topic`: create or reconfigure a topic. @throws BrokerError `400` on a bad config. */
  putTopic(topic: string, config: Partial<TopicConfig> = {}): Promise<TopicSaved> {
    return this.#call('PUT /v1/topics/:topic', `/v1/topics/${encodeURIComponent(topic)}`, {
      type: 'normal',
      ...config,
    });
  }

  /** `GET /v1/topics/:topic`. @throws BrokerError `404` when it does not exist. */
  getTopic(topic: string): Promise<TopicView> {
    return this.#call('GET /v1/topics/:topic', `/v1/topics/${encodeURIComponent(topic)}`);
  }

  /** Every topic, DLQ topics included, by name (all pages of `GET /v1/topics`). */
  listTopics(): Promise<TopicView[]> {
    return this.#allByName(async (query) => {
      const answer = await this.#call('GET /v1/topics', `/v1/topics${query}`);
      return { items: answer.topics, cursor: answer.cursor };
    });
  }

  /**
   * `PUT /v1/groups/:group`: create or reconfigure a group; omitted fields take their defaults
   * (not the values they had). @throws BrokerError `400` on a bad config.
   */
  putGroup(group: string, config: GroupConfigInput = {}): Promise<GroupView> {
    return this.#call('PUT /v1/groups/:group', `/v1/groups/${encodeURIComponent(group)}`, config);
  }

  /** `GET /v1/groups/:group`: its config and stats. @throws BrokerError `404` when it does not exist. */
  getGroup(group: string): Promise<GroupView> {
    return this.#call('GET /v1/groups/:group', `/v1/groups/${encodeURIComponent(group)}`);
  }

  /** Every group, by name (all pages of `GET /v1/groups`). */
  listGroups(): Promise<GroupView[]> {
    return this.#allByName(async (query) => {
      const answer = await this.#call('GET /v1/groups', `/v1/groups${query}`);
      return { items: answer.groups, cursor: answer.cursor };
    });
  }

  /**
   * `GET /v1/messages/:messageId`: the message and, per group, its state and delivery history;
   * `undefined` when the broker has no such message.
   */
  async getMessage(messageId: string): Promise<MessageView | undefined> {
    try {
      return await this.#call('GET /v1/messages/:messageId', `/v1/messages/${encodeURIComponent(messageId)}`);
    } catch (error) {
      if (error instanceof BrokerError && error.code === ERROR_CODES.NOT_FOUND.code) return undefined;
      throw error;
    }
  }

  /** Every message in the group's DLQ, oldest first (all pages of `GET /v1/groups/:group/dlq`). */
  async listDlq(group: string): Promise<DeadLetterEntry[]> {
    const entries: DeadLetterEntry[] = [];
    let cursor: number | null = 0;
    for (let page = 0; page < MAX_PAGES && cursor !== null; page++) {
      const answer: DeadLetterPage = await this.#call(
        'GET /v1/groups/:group/dlq',
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
    const answer = await this.#call(
      'POST /v1/groups/:group/dlq/redrive',
      `/v1/groups/${encodeURIComponent(group)}/dlq/redrive`,
      options,
    );
    return answer.accepted;
  }

  /** Every page of a listing by name: `readPage` gets each page's `?limit=&cursor=`. */
  async #allByName<T>(
    readPage: (query: string) => Promise<{ readonly items: readonly T[]; readonly cursor: string | null }>,
  ): Promise<T[]> {
    const items: T[] = [];
    let cursor: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const answer: { readonly items: readonly T[]; readonly cursor: string | null } = await readPage(
        `?limit=${PAGE_LIMIT}${cursor === null ? '' : `&cursor=${cursor}`}`,
      );
      items.push(...answer.items);
      cursor = answer.cursor;
      if (cursor === null) break;
    }
    return items;
  }

  /**
   * One request of `route` at `url`; the answer is checked against the route's schema in
   * `@ricochet/protocol`. A non-2xx answer throws the `BrokerError` its body carries.
   * @throws Error when a 2xx answer does not match its schema (a broker bug).
   */
  async #call<R extends AdminRoute>(route: R, url: string, body?: unknown): Promise<AdminAnswer<R>> {
    const method = route.slice(0, route.indexOf(' ')) as 'GET' | 'PUT' | 'POST';
    const { response } = await retryUnavailable(
      `${method} ${url}`,
      async () => {
        const answer = await this.#broker.app.inject({
          method,
          url,
          ...(body === undefined
            ? {}
            : { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
        });
        const retryAfter = answer.headers['retry-after'];
        return { status: answer.statusCode, retryAfter: retryAfter?.toString(), response: answer };
      },
      this.#retry,
    );
    const parsed: unknown = response.body === '' ? undefined : JSON.parse(response.body);
    if (response.statusCode >= 200 && response.statusCode < 300) {
      const check = checkAdminAnswer(ADMIN_ANSWER_SCHEMAS[route], parsed);
      if (check.ok) return check.value as AdminAnswer<R>;
      throw new Error(`${method} ${url} answered a body that does not match its schema: ${check.problem}`);
    }
    const error = (parsed as Partial<AdminErrorAnswer> | undefined)?.error;
    throw new BrokerError(
      error?.code ?? response.statusCode,
      `${method} ${url}: ${error?.message ?? `HTTP ${response.statusCode}`}`,
      error?.details === undefined ? {} : { details: error.details as never },
    );
  }
}

function realSleep(delayMs: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, delayMs));
}
