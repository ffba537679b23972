import type { DeadLetterCause, GroupConfigInput, TopicConfig } from '@ricochet/core';
import { BrokerError, dlqTopicOf, ERROR_CODES, type ErrorDetails } from '@ricochet/protocol';
import { decodeNameCursor, encodeNameCursor } from '../../admin/page-query.js';
import type {
  DeadLetterPage,
  FifoHeadView,
  GroupView,
  MessageView,
  NamePage,
  QueueAdminCall,
  TopicBacklog,
  TopicView,
} from '../../engine/index.js';
import type { StoredMessage } from '../../store/records.js';
import { QUEUE_HEADER } from './queue-scope.js';

export interface RemoteAdminOptions {
  /**
   * The owner's WebSocket URL, as it advertises it (`--advertise-url`, `ws://` or `wss://`): its
   * admin API is at the same address over `http://` or `https://`.
   */
  readonly url: string;
  /** The cluster's peer token (`cluster/membership/peer-token.ts`). */
  readonly token: string;
  /** The queue, as the owner's store numbers it. */
  readonly queue: number;
  /** How long one call may take, its answer read. @default 10000 */
  readonly timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** The scheme of the admin API at the address of a WebSocket URL of each scheme. */
const HTTP_SCHEME_OF: Readonly<Record<string, string>> = { 'ws:': 'http:', 'wss:': 'https:' };

/**
 * The admin calls of a queue owned by a broker of an older release, one that does not grant the
 * `adminCalls` feature on a session between brokers (`peer-admin.ts` is the path between brokers
 * of this release): during a rolling upgrade, the router still reaches such an owner's queues.
 * Each answers what the same-named `BrokerEngine` method of the owner's queue answers, over the
 * owner's admin HTTP API with `ricochet-queue` and the peer token (`cluster/peers/queue-scope.ts`).
 * Kept for one release after `adminCalls`, with `queue-scope.ts` that answers such calls for
 * forwarding brokers of the older release.
 * Offsets are the queue's own, as an engine's are; the router tags them with the queue.
 *
 * The owner checks what the routes check, so arguments past the admin API's limits (a page of
 * more than 1,000, an empty `messageIds`) are refused with `400` where an engine would not look.
 * An error answer rejects with the owner's `BrokerError`, code and message as it sent them; an
 * owner that cannot be reached or does not answer within `timeoutMs`, with `503 BROKER_UNAVAILABLE`.
 */
export class RemoteAdmin {
  readonly queue: number;
  readonly #base: string;
  readonly #token: string;
  readonly #timeoutMs: number;

  /** Any admin call of the queue by its name (`QUEUE_ADMIN_CALLS`), as the router makes them. */
  readonly call: QueueAdminCall = (call, ...args) =>
    (this[call] as (...given: unknown[]) => Promise<never>).apply(this, args);

  /** @throws TypeError for a URL that is not `ws://` or `wss://`. */
  constructor(options: RemoteAdminOptions) {
    this.queue = options.queue;
    this.#base = adminBaseOf(options.url);
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  putTopic(name: string, config: TopicConfig): Promise<{ name: string; config: TopicConfig }> {
    return this.#call('PUT', `/v1/topics/${encodeURIComponent(name)}`, config);
  }

  /** `undefined` when the queue has no such topic. */
  describeTopic(name: string): Promise<TopicView | undefined> {
    return this.#find(`/v1/topics/${encodeURIComponent(name)}`);
  }

  /** R4 for `topic` in this queue; `undefined` when the queue has no such topic. */
  async topicBacklog(topic: string): Promise<TopicBacklog | undefined> {
    const answer = await this.#find<TopicBacklogJson>(`/v1/topics/${encodeURIComponent(topic)}/backlog`);
    // JSON leaves out a limit that is `undefined`.
    return answer && { ...answer, maxBacklogMessages: answer.maxBacklogMessages };
  }

  /** Bytes this queue's store holds, as its owner's watermarks read them. */
  async storedBytes(): Promise<number> {
    return (await this.#call<{ storedBytes: number }>('GET', '/v1/store')).storedBytes;
  }

  async listTopics(afterName: string | undefined, limit: number): Promise<NamePage<TopicView>> {
    const answer = await this.#call<{ topics: TopicView[]; cursor: string | null }>(
      'GET',
      `/v1/topics?${namePageQuery(afterName, limit)}`,
    );
    return { items: answer.topics, lastName: lastNameOf(answer.cursor) };
  }

  putGroup(name: string, input: GroupConfigInput): Promise<GroupView> {
    return this.#call('PUT', `/v1/groups/${encodeURIComponent(name)}`, input);
  }

  /** Pause or resume the group on the peer's queue (DESIGN.md §11). */
  pauseGroup(name: string, paused: boolean): Promise<GroupView | undefined> {
    return this.#call('POST', `/v1/groups/${encodeURIComponent(name)}/${paused ? 'pause' : 'resume'}`, {});
  }

  /** `undefined` when the queue has no such group. */
  describeGroup(name: string): Promise<GroupView | undefined> {
    return this.#find(`/v1/groups/${encodeURIComponent(name)}`);
  }

  async listGroups(afterName: string | undefined, limit: number): Promise<NamePage<GroupView>> {
    const answer = await this.#call<{ groups: GroupView[]; cursor: string | null }>(
      'GET',
      `/v1/groups?${namePageQuery(afterName, limit)}`,
    );
    return { items: answer.groups, lastName: lastNameOf(answer.cursor) };
  }

  /** `undefined` when the queue stores no message of that id. */
  async describeMessage(messageId: string): Promise<MessageView | undefined> {
    const answer = await this.#find<{ message: MessageJson; groups: MessageView['groups'] }>(
      `/v1/messages/${encodeURIComponent(messageId)}`,
    );
    if (answer === undefined) return undefined;
    const { bodyBytes: _bodyBytes, bodyBase64, ...message } = answer.message;
    return { message: { ...message, body: bodyOf(bodyBase64) }, groups: answer.groups };
  }

  /** @throws BrokerError NOT_FOUND for a group the queue does not have, as the engine does. */
  async listDeadLetters(group: string, fromOffset: number, limit: number): Promise<DeadLetterPage> {
    const answer = await this.#call<{ messages: DeadLetterJson[]; cursor: number | null }>(
      'GET',
      `/v1/groups/${encodeURIComponent(group)}/dlq?cursor=${fromOffset}&limit=${limit}`,
    );
    return { messages: answer.messages.map((entry) => deadLetterOf(group, entry)), cursor: answer.cursor };
  }

  /** D2 in this queue: the owner paces it at `ratePerSecond`. */
  async redrive(
    group: string,
    options: { messageIds?: readonly string[]; ratePerSecond?: number },
  ): Promise<{ accepted: number }> {
    const { accepted } = await this.#call<{ accepted: number }>(
      'POST',
      `/v1/groups/${encodeURIComponent(group)}/dlq/redrive`,
      options,
    );
    return { accepted };
  }

  async fifoHeads(groupName: string, limit: number): Promise<FifoHeadView[]> {
    const answer = await this.#call<{ messageGroups: FifoHeadView[] }>(
      'GET',
      `/v1/groups/${encodeURIComponent(groupName)}/fifo?limit=${limit}`,
    );
    // JSON leaves out the fields that are `undefined`; the view has every one.
    return answer.messageGroups.map((head) => ({
      topic: head.topic,
      messageGroup: head.messageGroup,
      offset: head.offset,
      messageId: head.messageId,
      state: head.state,
      deliveryAttempt: head.deliveryAttempt,
      retryAtMs: head.retryAtMs,
    }));
  }

  /** A `GET` whose `404 NOT_FOUND` means "no such thing": `undefined`. */
  async #find<T>(path: string): Promise<T | undefined> {
    try {
      return await this.#call<T>('GET', path);
    } catch (error) {
      if (error instanceof BrokerError && error.errorName === 'NOT_FOUND') return undefined;
      throw error;
    }
  }

  /**
   * One request to the owner's admin API for this queue: the answer's JSON on a 2xx, else the
   * error it carries. The timeout covers reading the answer too.
   */
  async #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const where = `${method} ${path} to queue ${this.queue}'s owner at ${this.#base}`;
    let status: number;
    let text: string;
    try {
      const response = await fetch(`${this.#base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.#token}`,
          [QUEUE_HEADER]: String(this.queue),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      status = response.status;
      text = await response.text();
    } catch (error) {
      const why =
        error instanceof Error && error.name === 'TimeoutError'
          ? `no answer within ${this.#timeoutMs} ms`
          : reasonOf(error);
      throw new BrokerError(ERROR_CODES.BROKER_UNAVAILABLE.code, `${where} failed: ${why}`, { cause: error });
    }
    const answer = parseJson(text);
    if (status < 200 || status >= 300) throw errorOf(status, answer, where);
    if (answer === undefined)
      throw BrokerError.of('INTERNAL_ERROR', `${where} answered HTTP ${status} with a body that is not JSON`);
    return answer as T;
  }
}

/** The admin API's base URL of an owner advertised at a WebSocket URL: same address, HTTP scheme. */
function adminBaseOf(url: string): string {
  const parsed = new URL(url);
  const scheme = HTTP_SCHEME_OF[parsed.protocol];
  if (scheme === undefined) throw new TypeError(`"${url}" is not a WebSocket URL: ws://… or wss://…`);
  // The path too, as `PeerConnection` keeps it for `/v1/ws`: an owner behind a proxy's prefix.
  return `${scheme}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
}

/** `?cursor=&limit=` of the listings by name: the cursor is the name the page continues after. */
function namePageQuery(afterName: string | undefined, limit: number): string {
  return afterName === undefined ? `limit=${limit}` : `cursor=${encodeNameCursor(afterName)}&limit=${limit}`;
}

function lastNameOf(cursor: string | null): string | null {
  return cursor === null ? null : decodeNameCursor(cursor);
}

/** R4 for a topic as `GET /v1/topics/:topic/backlog` sends it: without a limit when it has none. */
type TopicBacklogJson = Omit<TopicBacklog, 'maxBacklogMessages'> & { maxBacklogMessages?: number };

/** A stored message as `GET /v1/messages/:messageId` sends it: its body in base64. */
type MessageJson = Omit<StoredMessage, 'body'> & { bodyBytes: number; bodyBase64: string };

/**
 * A DLQ entry as `GET /v1/groups/:group/dlq` sends it to a broker (`dead-letter-routes.ts`): the
 * message with its `deadLetter` record spread flat, less what follows from the group (its topic,
 * `deadLetter.group`), its body in base64. Listed copies are never redriven (`redrivenAt`).
 */
type DeadLetterJson = Omit<StoredMessage, 'body' | 'topic' | 'deadLetter'> & {
  originTopic?: string;
  originOffset?: number;
  attempts?: number;
  reason?: string;
  deadLetteredAt?: number;
  cause?: string;
  firstFailedAt?: number;
  lastLease?: number;
  bodyBytes: number;
  bodyBase64: string;
};

function deadLetterOf(group: string, entry: DeadLetterJson): StoredMessage {
  const {
    originTopic,
    originOffset,
    attempts,
    reason,
    deadLetteredAt,
    cause,
    firstFailedAt,
    lastLease,
    bodyBytes: _bodyBytes,
    bodyBase64,
    ...message
  } = entry;
  // A copy in a DLQ topic always has its record (`dead-letter-copy.ts`), sent whole or not at all.
  const deadLetter =
    originTopic === undefined
      ? undefined
      : {
          group,
          originTopic,
          originOffset: originOffset as number,
          attempts: attempts as number,
          reason: reason as string,
          deadLetteredAt: deadLetteredAt as number,
          ...(cause === undefined ? {} : { cause: cause as DeadLetterCause }),
          ...(firstFailedAt === undefined ? {} : { firstFailedAt }),
          lastLease: lastLease as number,
        };
  return {
    ...message,
    topic: dlqTopicOf(group),
    body: bodyOf(bodyBase64),
    ...(deadLetter === undefined ? {} : { deadLetter }),
  };
}

function bodyOf(base64: string): Uint8Array {
  const bytes = Buffer.from(base64, 'base64');
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The error an answer carries (`admin/http-error.ts`: `{ error: { code, name, message, details? } }`),
 * as the owner's engine threw it. An answer without one did not come from a broker's admin API
 * (a proxy's error page): a 5xx says the owner cannot be reached through it, anything else that
 * something answered that does not speak the API.
 */
function errorOf(status: number, answer: unknown, where: string): BrokerError {
  const error = (answer as { error?: unknown } | undefined)?.error;
  if (isApiError(error)) {
    const details = primitiveDetails(error.details);
    return new BrokerError(error.code, error.message, details === undefined ? {} : { details });
  }
  return BrokerError.of(
    status >= 500 ? 'BROKER_UNAVAILABLE' : 'INTERNAL_ERROR',
    `${where} answered HTTP ${status} without an error of the admin API`,
  );
}

function isApiError(error: unknown): error is { code: number; message: string; details?: unknown } {
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  return typeof code === 'number' && typeof message === 'string';
}

/** The details a `BrokerError` can hold: the routes' are all strings, numbers and booleans. */
function primitiveDetails(details: unknown): ErrorDetails | undefined {
  if (typeof details !== 'object' || details === null) return undefined;
  const kept = Object.entries(details).filter(([, value]) =>
    ['string', 'number', 'boolean'].includes(typeof value),
  );
  return kept.length === 0 ? undefined : (Object.fromEntries(kept) as ErrorDetails);
}

function reasonOf(error: unknown): string {
  // fetch fails with "fetch failed" and the socket's error as its cause.
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}
