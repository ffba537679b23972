import type { BrokerError } from '@ricochet/protocol';
import { backlogRefusal, type TopicBacklog } from '../../engine/index.js';
import type { RoutedQueue } from './routed-queue.js';

/**
 * How long a broker that owns no queue trusts an answer that a topic has no backlog limit, before
 * asking the owners again: a limit set since takes at most this long to throttle its sends.
 */
const NO_LIMIT_TRUSTED_MS = 1_000;
/** A bound on the topics remembered without a limit; past it, all are forgotten. */
const MAX_REMEMBERED_TOPICS = 10_000;

export interface ClusterBacklogDeps {
  /** Every queue as routed now. */
  readonly queues: () => readonly RoutedQueue[];
  readonly now: () => number;
}

/**
 * R4 over every queue when some are owned by other brokers (`--store-spread`): a group's backlog
 * is what it has left in every queue, wherever each is owned, so the broker a send reaches asks
 * the other owners for their share (`GET /v1/topics/:topic/backlog` on each queue) before it
 * stores or forwards anything, and refuses the send with `530` when a group reading the topic is
 * at its limit. Each owner still checks its own queues' share as it stores; that share is never
 * more than the whole, so it refuses nothing this check accepted but a send racing another.
 *
 * Only a topic with a limit costs the round trips: the topic configs are in every queue, so a
 * queue this broker owns tells whether there is one. A broker that owns no queue asks the owners,
 * and remembers a topic without a limit for {@link NO_LIMIT_TRUSTED_MS}.
 *
 * A queue between owners, or an owner that does not answer, counts as an empty share: throttling
 * is a brake on growth, and failing every send over one queue's hand-over would be worse.
 */
export class ClusterBacklog {
  readonly #deps: ClusterBacklogDeps;
  /** Topics an owner said have no limit, until when that answer is trusted. */
  readonly #noLimitUntil = new Map<string, number>();

  constructor(deps: ClusterBacklogDeps) {
    this.#deps = deps;
  }

  /** The topics among `topics` a send must be refused for now, each with its refusal. */
  async refusals(topics: ReadonlySet<string>): Promise<Map<string, BrokerError>> {
    const refusals = new Map<string, BrokerError>();
    await Promise.all(
      [...topics].map(async (topic) => {
        const refusal = await this.#refusal(topic);
        if (refusal) refusals.set(topic, refusal);
      }),
    );
    return refusals;
  }

  async #refusal(topic: string): Promise<BrokerError | undefined> {
    const queues = this.#deps.queues();
    const local = queues.flatMap((queue) => (queue.engine ? [queue.engine.topicBacklog(topic)] : []));
    if (local.length > 0 && local.every((share) => share?.maxBacklogMessages === undefined)) return undefined;
    if (local.length === 0 && (this.#noLimitUntil.get(topic) ?? 0) > this.#deps.now()) return undefined;

    const remote = await Promise.all(
      queues
        .filter((queue) => queue.engine === undefined)
        .map((queue) => queue.admin('topicBacklog', topic).catch(() => undefined)),
    );
    const whole = mergeTopicBacklogs(topic, [...local, ...remote]);
    const limit = whole?.maxBacklogMessages;
    if (limit === undefined) {
      if (local.length === 0) this.#rememberNoLimit(topic);
      return undefined;
    }
    const atLimit = whole?.groups.find((group) => group.backlog >= limit);
    return atLimit && backlogRefusal(topic, atLimit.group, atLimit.backlog, limit);
  }

  #rememberNoLimit(topic: string): void {
    if (this.#noLimitUntil.size >= MAX_REMEMBERED_TOPICS) this.#noLimitUntil.clear();
    this.#noLimitUntil.set(topic, this.#deps.now() + NO_LIMIT_TRUSTED_MS);
  }
}

/**
 * R4 for a topic over the queues' shares: its limit (the same in every queue that has the topic;
 * the first found), and each group's backlog added up over the queues. `undefined` when no queue
 * has the topic.
 */
export function mergeTopicBacklogs(
  topic: string,
  shares: readonly (TopicBacklog | undefined)[],
): TopicBacklog | undefined {
  const found = shares.filter((share): share is TopicBacklog => share !== undefined);
  if (found.length === 0) return undefined;
  const backlogs = new Map<string, number>();
  for (const share of found) {
    for (const { group, backlog } of share.groups) backlogs.set(group, (backlogs.get(group) ?? 0) + backlog);
  }
  return {
    topic,
    maxBacklogMessages: found.find((share) => share.maxBacklogMessages !== undefined)?.maxBacklogMessages,
    groups: [...backlogs].map(([group, backlog]) => ({ group, backlog })),
  };
}
